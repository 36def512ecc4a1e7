// session.rerun (issue 27): a failed or aborted turn runs again; a call that landed a result never
// runs again (R19), a call that landed an error does, and the model goes on from where it stopped.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool, InvalidTagsError } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { createHarnessHandler } from '../../src/http/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'

const state = { providerDown: true, flakyBroken: true, charges: new Map<string, number>() }

const charge = durableTool(
  toolDefinition({ name: 'charge', description: 'Charge a card', inputSchema: z.object({ orderId: z.string() }) }),
  async ({ orderId }, { step }) => {
    await step.do(`charge:${orderId}`, async () => {
      state.charges.set(orderId, (state.charges.get(orderId) ?? 0) + 1)
    })
    return { charged: orderId }
  },
)

const flaky = durableTool(toolDefinition({ name: 'flaky', description: 'Fails while broken', inputSchema: z.object({}) }), async () => {
  if (state.flakyBroken) throw new Error('the mail service is down')
  return { sent: true }
})

const rerunHarness = defineHarness({
  name: 'rerun',
  adapter: scriptedModel([
    {
      toolCalls: [
        { name: 'charge', input: { orderId: 'o-1' } },
        { name: 'flaky', input: {} },
      ],
    },
    () => {
      if (state.providerDown) throw new Error('provider unavailable')
      return { text: 'all done' }
    },
  ]),
  tools: [charge, flaky],
})

// a step whose tries ran out while its service was down, in a turn the provider then failed
const mailState = { serviceDown: true, providerDown: true, tries: 0 }
const mail = durableTool(
  toolDefinition({ name: 'mail', description: 'Send a mail', inputSchema: z.object({}) }),
  async (_input, { step }) => {
    await step.do(
      'send',
      async () => {
        mailState.tries++
        if (mailState.serviceDown) throw new Error('the mail service is down')
      },
      { retry: { attempts: 2, delay: '10ms' } },
    )
    return { sent: true }
  },
)
const mailHarness = defineHarness({
  name: 'rerun-mail',
  adapter: scriptedModel([
    { toolCalls: [{ name: 'mail', input: {} }] },
    () => {
      if (mailState.providerDown) throw new Error('provider unavailable')
      return { text: 'mailed' }
    },
  ]),
  tools: [mail],
})

describe('session.rerun', () => {
  const hosts = useInProcessHosts()

  it('R19 a rerun never runs a kept call again: the failed call and the model go on, the charge stays kept', async () => {
    const { host } = hosts.start(rerunHarness, 'rerun')
    const session = host.open(rerunHarness, { sessionId: 's-1' })
    const { inputId } = await session.prompt('charge order 1', { metadata: { order: 'o-1' }, principal: 'alice@acme' })
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'failed', error: { code: 'model_error' } })
    state.providerDown = false
    state.flakyBroken = false

    expect(await session.rerun(inputId, { rerunId: 'rr-1', principal: 'ops@acme' })).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed', text: 'all done' })
    // the same rerunId again does nothing; a completed turn has nothing to run again
    expect(await session.rerun(inputId, { rerunId: 'rr-1' })).toBe(true)
    expect(await session.rerun(inputId)).toBe(false)

    const log = await session.log.read()
    const started = records(log, 'harness.tool.started')
    expect(started.filter((r) => r.name === 'charge')).toHaveLength(1)
    expect(started.filter((r) => r.name === 'flaky').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(state.charges.get('o-1')).toBe(1)
    const [rerun, ...more] = records(log, 'harness.turn.rerun')
    expect(more).toEqual([])
    const flakyId = started.find((r) => r.name === 'flaky')!.toolCallId
    expect(rerun).toMatchObject({ inputId, rerunId: 'rr-1', principal: 'ops@acme', calls: [flakyId] })
    expect(records(log, 'harness.input')[0]).toMatchObject({ principal: 'alice@acme', metadata: { order: 'o-1' } })
    // the turn's results: the kept charge once, the flaky call's error and then its result
    const results = records(log, 'harness.tool.result')
    expect(results.filter((r) => r.name === 'charge')).toHaveLength(1)
    expect(results.filter((r) => r.name === 'flaky').map((r) => (r.error ? 'error' : 'ok'))).toEqual(['error', 'ok'])
    expect(records(log, 'harness.input.settled').map((r) => r.outcome)).toEqual(['failed', 'completed'])
  })

  it("POST control { op: 'rerun' } behind authorize and canAccess: the prompt's and the rerun's principal are recorded", async () => {
    state.providerDown = true
    state.flakyBroken = false
    const { host } = hosts.start(rerunHarness, 'rerun-http')
    const handler = createHarnessHandler({
      host,
      harness: rerunHarness,
      authorize: (request) => (request.headers.get('authorization') === 'Bearer t' ? { sub: 'op-42', name: 'Ops' } : null),
      canAccess: (_principal, threadId) => !threadId.startsWith('secret-'),
    })
    const control = (body: object, token = 't') =>
      handler(
        new Request('http://dh.test/api/control', {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        }),
      )
    const prompted = await (await control({ op: 'prompt', threadId: 'h-1', text: 'go', metadata: { ticket: 'T-9' } })).json()
    const session = host.open(rerunHarness, { sessionId: 'h-1' })
    expect(await session.settled(prompted.inputId)).toMatchObject({ outcome: 'failed' })
    state.providerDown = false
    expect((await control({ op: 'rerun', threadId: 'h-1', inputId: prompted.inputId }, 'wrong')).status).toBe(401)
    expect((await control({ op: 'rerun', threadId: 'secret-1', inputId: prompted.inputId })).status).toBe(403)
    // `again` naming no call of the turn: refused, nothing rerun
    const refused = await control({ op: 'rerun', threadId: 'h-1', inputId: prompted.inputId, again: ['no-such-call'] })
    expect(refused.status).toBe(409)
    expect(await refused.json()).toMatchObject({ code: 'rerun_call' })
    const receipt = await control({ op: 'rerun', threadId: 'h-1', inputId: prompted.inputId, rerunId: 'http-1' })
    expect(await receipt.json()).toEqual({ op: 'rerun', threadId: 'h-1', status: 'rerun', inputId: prompted.inputId })
    expect(await session.settled(prompted.inputId)).toMatchObject({ outcome: 'completed' })
    expect(await (await control({ op: 'rerun', threadId: 'h-1', inputId: prompted.inputId })).json()).toMatchObject({
      status: 'not_rerunnable',
    })
    const log = await session.log.read()
    expect(records(log, 'harness.input')[0]).toMatchObject({ principal: 'op-42', metadata: { ticket: 'T-9' } })
    expect(records(log, 'harness.turn.rerun')).toMatchObject([{ rerunId: 'http-1', principal: 'op-42' }])
  })

  it('R16 a rerun tries a step afresh whose retries were exhausted: its retry state is cleared with the call', async () => {
    const { host } = hosts.start(mailHarness, 'rerun-mail')
    const session = host.open(mailHarness, { sessionId: 'm-1' })
    const { inputId } = await session.prompt('mail them')
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'failed' })
    expect(mailState.tries).toBe(2)
    const failed = records(await session.log.read(), 'harness.tool.result')
    expect(failed).toMatchObject([{ name: 'mail', error: { message: expect.stringMatching(/send/) } }])

    mailState.serviceDown = false
    mailState.providerDown = false
    expect(await session.rerun(inputId, { rerunId: 'mail-rr' })).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed', text: 'mailed' })
    // the step ran once more (not thrown again from its stored end) and the call landed its result
    expect(mailState.tries).toBe(3)
    const results = records(await session.log.read(), 'harness.tool.result')
    expect(results.map((r) => (r.error ? 'error' : 'ok'))).toEqual(['error', 'ok'])
  })

  it('refuses bad tags before anything is written', async () => {
    const { host } = hosts.start(rerunHarness, 'rerun-tags')
    const session = host.open(rerunHarness, { sessionId: 's-2' })
    await expect(session.prompt('x', { metadata: { 'bad key': 'v' } })).rejects.toBeInstanceOf(InvalidTagsError)
    await expect(session.prompt('x', { metadata: { k: 5 as unknown as string } })).rejects.toBeInstanceOf(InvalidTagsError)
    await expect(session.prompt('x', { principal: '' })).rejects.toBeInstanceOf(InvalidTagsError)
    expect(await session.log.read()).toEqual([])
  })
})
