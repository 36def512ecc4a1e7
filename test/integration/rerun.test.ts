// session.rerun (issue 27): a failed or aborted turn runs again; a call that landed a result never
// runs again (R19), a call that landed an error does, and the model goes on from where it stopped.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool, InvalidTagsError } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
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

  it('refuses bad tags before anything is written', async () => {
    const { host } = hosts.start(rerunHarness, 'rerun-tags')
    const session = host.open(rerunHarness, { sessionId: 's-2' })
    await expect(session.prompt('x', { metadata: { 'bad key': 'v' } })).rejects.toBeInstanceOf(InvalidTagsError)
    await expect(session.prompt('x', { metadata: { k: 5 as unknown as string } })).rejects.toBeInstanceOf(InvalidTagsError)
    await expect(session.prompt('x', { principal: '' })).rejects.toBeInstanceOf(InvalidTagsError)
    expect(await session.log.read()).toEqual([])
  })
})
