import { toolDefinition } from '@tanstack/ai'
import { expectTypeOf, test } from 'vitest'
import { z } from 'zod'
import {
  agentTool,
  createHarnessHost,
  defineHarness,
  durableTool,
  isTransientModelError,
  retryTransientErrors,
  withReplay,
  type Settled,
} from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'

const approve = durableTool(
  toolDefinition({ name: 'approve', description: 'ask', inputSchema: z.object({ amount: z.number() }) }),
  async ({ amount }, { step, secrets, toolCallId }) => {
    expectTypeOf(amount).toEqualTypeOf<number>()
    expectTypeOf(toolCallId).toEqualTypeOf<string>()
    expectTypeOf(secrets.get('KEY')).toEqualTypeOf<string | undefined>()
    const answer = await step.ask({ name: 'ok', message: 'Approve?', schema: z.object({ approved: z.boolean() }) })
    expectTypeOf(answer).toEqualTypeOf<{ approved: boolean }>()
    await step.sleep('wait', '15m')
    await step.sleep('wait-ms', 90_000)
    // @ts-expect-error a duration needs a unit: ms, s, m, h or d
    await step.sleep('bad', '15 minutes')
    return answer.approved
  },
)

test('the harness API is typed from the schema, with no casts at the call site', () => {
  const lookup = withReplay(
    toolDefinition({ name: 'lookup', description: 'stock', inputSchema: z.object({ sku: z.string() }) }).server(async ({ sku }) => sku),
    'safe',
  )
  expectTypeOf(lookup.replay).toEqualTypeOf<'safe' | 'never'>()
  // a durable tool carries its replay option, as the page says
  expectTypeOf(approve.replay).toEqualTypeOf<'safe' | 'never'>()
  const helper = defineHarness({ name: 'helper', adapter: scriptedModel([]), tools: [approve] })
  const harness = defineHarness({
    name: 'acme/assistant',
    adapter: scriptedModel([{ toolCalls: [{ name: 'approve', input: { amount: 1 } }] }, { text: 'done' }]),
    tools: [approve, lookup, agentTool(helper)],
    hooks: { onAfterToolCall: (info) => (info.error ? { type: 'replaceResult', result: 'sorry' } : undefined) },
    durability: { maxAttempts: 3, timeoutMs: 60_000, lockMs: 2_000, stalledMs: 1_000 },
  })
  // @ts-expect-error durability options are numbers
  defineHarness({ name: 'x', adapter: scriptedModel([]), durability: { maxAttempts: 'many' } })
  const host = createHarnessHost({ redis: 'redis://127.0.0.1:6379', harnesses: [harness] })
  const session = host.open(harness, { sessionId: 's1' })
  expectTypeOf(session.prompt('hi')).resolves.toEqualTypeOf<{ inputId: string }>()
  expectTypeOf(session.settled('i1')).resolves.toEqualTypeOf<Settled>()
  expectTypeOf(session.abort('i1')).resolves.toEqualTypeOf<boolean>()
  expectTypeOf(session.resume('i1')).resolves.toEqualTypeOf<boolean>()
  // DESIGN §10's turn options
  defineHarness({
    name: 'turns',
    adapter: scriptedModel([]),
    turn: {
      onModelError: retryTransientErrors({
        maxRetries: 5,
        baseDelayMs: 500,
        maxDelayMs: 30_000,
        maxRetryAfterMs: 60_000,
        isTransient: isTransientModelError,
        onExhausted: 'pause',
      }),
      beforeFinish: ({ messages }) => (messages.length > 3 ? undefined : { messages: [{ role: 'user', content: 'go on' }], ephemeral: [] }),
      maxFinishCycles: 4,
    },
  })
  // @ts-expect-error onExhausted is 'fail' or 'pause'
  retryTransientErrors({ onExhausted: 'wait' })
  expectTypeOf(session.runTool({ name: 'lookup', input: { sku: 'x' } })).resolves.toEqualTypeOf<unknown>()
  expectTypeOf(session.answer('q1', { approved: true })).resolves.toEqualTypeOf<void>()
  expectTypeOf(host.sweep({ limit: 10 })).resolves.items.toHaveProperty('reason')
})

test("toolExecution is 'parallel' or 'sequential'", () => {
  expectTypeOf(defineHarness({ name: 's', adapter: scriptedModel([]), toolExecution: 'sequential' }).toolExecution).toEqualTypeOf<
    'parallel' | 'sequential'
  >()
  // @ts-expect-error not a mode
  defineHarness({ name: 'x', adapter: scriptedModel([]), toolExecution: 'serial' })
})
