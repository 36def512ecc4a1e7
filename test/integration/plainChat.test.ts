// R13: the page's tools (checkout, notify, remember) run unchanged in plain `chat()` of @tanstack/ai,
// with no session log: step.do runs fn every time, step.sleep waits its full time, step.ask and
// append throw with a message that says a durable session is needed.
import { performance } from 'node:perf_hooks'
import { chat, toolDefinition, type ModelMessage } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { durableTool } from '../../src/index.js'
import { DuplicateStepError, DurableSessionRequiredError } from '../../src/errors/index.js'
import { scriptedModel, type ScriptedToolCall } from '../../src/testing/index.js'

const billing = {
  charges: [] as string[],
  invoices: [] as string[],
  async charge(orderId: string) {
    billing.charges.push(orderId)
    return { id: `ch_${orderId}` }
  },
  async sendInvoice(chargeId: string) {
    billing.invoices.push(chargeId)
  },
}

const mailer = {
  sent: [] as string[],
  async send(to: string, _body: string) {
    mailer.sent.push(to)
    return { id: `mail_${mailer.sent.length}` }
  },
}

const memories: string[] = []

// The three tools of the page, as written there (memories records that remember's body ran)
const checkout = durableTool(
  toolDefinition({
    name: 'checkout',
    description: 'Charge an order and send the invoice',
    inputSchema: z.object({ orderId: z.string() }),
  }),
  async ({ orderId }, { step }) => {
    const payment = await step.do(`charge:${orderId}`, () => billing.charge(orderId))
    await step.do(`invoice:${payment.id}`, () => billing.sendInvoice(payment.id))
    return { chargeId: payment.id }
  },
)

const notify = durableTool(
  toolDefinition({
    name: 'notify',
    description: 'Email a customer',
    inputSchema: z.object({ to: z.string(), body: z.string() }),
  }),
  async ({ to, body }, { step }) => {
    const mail = await step.do(`send:${to}`, () => mailer.send(to, body))
    return { mailId: mail.id }
  },
  { replay: 'never' },
)

const remember = durableTool(
  toolDefinition({
    name: 'remember',
    description: 'Remember a fact about the user',
    inputSchema: z.object({ fact: z.string() }),
  }),
  async ({ fact }, { append }) => {
    memories.push(fact)
    append([{ type: 'app.memory', fact }])
    return 'Remembered.'
  },
)

const approve = durableTool(
  toolDefinition({ name: 'approve', description: 'Ask a person', inputSchema: z.object({ amount: z.number() }) }),
  async ({ amount }, { step }) => {
    const answer = await step.ask({ name: 'approve', message: `Refund ${amount}?`, schema: z.object({ approved: z.boolean() }) })
    return { approved: answer.approved }
  },
)

const napTimes: number[] = []
const nap = durableTool(
  toolDefinition({ name: 'nap', description: 'Sleep', inputSchema: z.object({ ms: z.number(), until: z.boolean().optional() }) }),
  async ({ ms, until }, { step }) => {
    const start = performance.now()
    if (until) await step.sleepUntil('nap', Date.now() + ms)
    else await step.sleep('nap', ms)
    napTimes.push(performance.now() - start)
    return 'rested'
  },
)

let made: { a?: undefined; b: Array<string | undefined>; kept: string } | undefined
const copy = durableTool(
  toolDefinition({ name: 'copy', description: 'Returns what step.do returned', inputSchema: z.object({}) }),
  async (_input, { step }) => {
    const value = await step.do('value', () => (made = { a: undefined, b: [undefined, 'x'], kept: 'yes' }))
    return { keys: Object.keys(value), b: value.b, same: value === made }
  },
)

const badStep = durableTool(
  toolDefinition({ name: 'badStep', description: 'A step that is not JSON', inputSchema: z.object({}) }),
  // cast: TypeScript refuses a Date step value; run time must refuse it in plain chat() too
  async (_input, { step }) => step.do('when', (() => new Date()) as () => never),
)

const twice = durableTool(
  toolDefinition({ name: 'twice', description: 'One step name twice', inputSchema: z.object({}) }),
  async (_input, { step }) => {
    await step.do('a', () => 1)
    await step.do('a', () => 2)
    return 'unreachable'
  },
)

const tools = [checkout, notify, remember, approve, nap, copy, badStep, twice]

/**
 * Runs one plain chat(): the model asks for `calls` in one batch, then answers. Returns the messages the
 * second model call was shown (where the tool results and errors reach the model).
 */
async function runChat(calls: ScriptedToolCall[]): Promise<ModelMessage[]> {
  let seen: ModelMessage[] = []
  const adapter = scriptedModel([
    { toolCalls: calls },
    ({ messages }) => {
      seen = messages
      return { text: 'done' }
    },
  ])
  const stream = chat({ adapter, messages: [{ role: 'user', content: 'go' }], tools })
  let text = ''
  for await (const chunk of stream) if (chunk.type === 'TEXT_MESSAGE_CONTENT') text += chunk.delta
  expect(text).toBe('done')
  return seen
}

/** The tool message for each call id: JSON parsed, a string result as it is. */
function toolResults(messages: ModelMessage[]): Record<string, unknown> {
  const parse = (content: unknown) => {
    try {
      return JSON.parse(String(content))
    } catch {
      return content
    }
  }
  return Object.fromEntries(messages.filter((m) => m.role === 'tool').map((m) => [m.toolCallId, parse(m.content)]))
}

describe('durable tools in plain chat() (R13)', () => {
  it('R13: step.do runs fn every time it is called, and the tool result reaches the model', async () => {
    const before = { charges: billing.charges.length, invoices: billing.invoices.length, mails: mailer.sent.length }
    const messages = await runChat([
      { id: 'c1', name: 'checkout', input: { orderId: '42' } },
      { id: 'c2', name: 'checkout', input: { orderId: '42' } },
      { id: 'n1', name: 'notify', input: { to: 'ada@example.com', body: 'hi' } },
    ])
    expect(toolResults(messages)).toEqual({
      c1: { chargeId: 'ch_42' },
      c2: { chargeId: 'ch_42' },
      n1: { mailId: expect.stringMatching(/^mail_/) },
    })
    // the same tool with the same input twice: both steps ran twice (no log to replay from)
    expect(billing.charges.slice(before.charges)).toEqual(['42', '42'])
    expect(billing.invoices.slice(before.invoices)).toEqual(['ch_42', 'ch_42'])
    expect(mailer.sent.slice(before.mails)).toEqual(['ada@example.com'])

    // called directly with one toolCallId twice: still runs each time
    await checkout.execute!({ orderId: '7' }, { toolCallId: 'same', context: undefined, emitCustomEvent: () => {} })
    await checkout.execute!({ orderId: '7' }, { toolCallId: 'same', context: undefined, emitCustomEvent: () => {} })
    expect(billing.charges.filter((c) => c === '7')).toEqual(['7', '7'])
  })

  it('R13: step.do returns the JSON copy in plain chat() too', async () => {
    const results = toolResults(
      await runChat([
        { id: 'j1', name: 'copy', input: {} },
        { id: 'j2', name: 'badStep', input: {} },
      ]),
    )
    expect(results.j1).toEqual({ keys: ['b', 'kept'], b: [null, 'x'], same: false })
    expect((results.j2 as { error: string }).error).toContain('Step "when" value must be JSON, but value is a Date')
  })

  it('R13: step.sleep and step.sleepUntil wait their full time', async () => {
    napTimes.length = 0
    for (const input of [{ ms: 150 }, { ms: 150, until: true }]) {
      // timed from before chat() starts, so the bound cannot be cut by a clock read inside the tool
      const start = performance.now()
      const results = toolResults(await runChat([{ id: 's1', name: 'nap', input }]))
      const waited = performance.now() - start
      expect(results).toEqual({ s1: 'rested' })
      // a lower bound only; Node timers count whole ms of the event loop's clock, so allow that 1 ms
      expect(waited).toBeGreaterThanOrEqual(149)
    }
    expect(napTimes).toHaveLength(2)
  })

  it('R13: step.ask and append throw DurableSessionRequiredError, and the model sees it as a tool error', async () => {
    const messages = await runChat([
      { id: 'r1', name: 'remember', input: { fact: 'likes tea' } },
      { id: 'a1', name: 'approve', input: { amount: 5 } },
    ])
    const results = toolResults(messages) as Record<string, { error: string }>
    expect(results.r1!.error).toBe(new DurableSessionRequiredError('append').message)
    expect(results.r1!.error).toMatch(/^append needs a durable session/)
    expect(results.a1!.error).toBe(new DurableSessionRequiredError('step.ask').message)
    expect(results.a1!.error).toMatch(/^step\.ask needs a durable session/)
    // the tool message answers its own call, in the conversation the next model call gets
    const assistant = messages.find((m) => m.role === 'assistant')
    expect(assistant?.toolCalls?.map((c) => c.id)).toEqual(['r1', 'a1'])
    expect(memories).toContain('likes tea')

    // the typed error, when the tool is called directly
    const ctx = { toolCallId: 'x', context: undefined, emitCustomEvent: () => {} }
    const appendError = await Promise.resolve(remember.execute!({ fact: 'f' }, ctx)).catch((e: unknown) => e)
    expect(appendError).toBeInstanceOf(DurableSessionRequiredError)
    expect((appendError as DurableSessionRequiredError).code).toBe('durable_session_required')
    await expect(Promise.resolve(approve.execute!({ amount: 1 }, ctx))).rejects.toBeInstanceOf(DurableSessionRequiredError)
  })

  it('R2: the same step name twice in one call throws in plain chat() too', async () => {
    const results = toolResults(await runChat([{ id: 'd1', name: 'twice', input: {} }])) as Record<string, { error: string }>
    expect(results.d1!.error).toBe(new DuplicateStepError('d1', 'a').message)
  })
})
