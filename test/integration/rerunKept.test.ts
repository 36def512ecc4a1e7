// A rerun keeps the `never` promise (issue 50): a `replay: 'never'` call whose turn ended while its
// tool was under way (aborted, interrupted, cancelled) keeps what it landed on a rerun: the tool does
// not run again and the model sees the same result. An operator who knows the side effect did not
// happen names the call in `again`. A `safe` call runs again, its finished steps from storage.
import { toolDefinition } from '@tanstack/ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool, withTimeout, type Harness, type HarnessHost } from '../../src/index.js'
import { RerunCallError } from '../../src/errors/index.js'
import { SessionLog, turnJobId, type RedisClient } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { cleanupPrefix, getRedisUrl, rigClient, uniquePrefix } from '../rig.js'

/** A gate a tool waits on, ignoring its abort signal; opened by the test. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

/** A harness whose model calls `tool` once, then answers with what the tool's result said. */
function harnessOf(name: string, tool: NonNullable<Parameters<typeof defineHarness>[0]['tools']>[number], input: unknown = {}): Harness {
  return defineHarness({
    name,
    adapter: scriptedModel([
      { toolCalls: [{ name: tool.name, input }] },
      ({ messages }) => ({ text: `saw: ${String(messages.at(-1)?.content)}` }),
    ]),
    tools: [tool],
  })
}

/** A plain tool (replay 'never' by default) that sends once its gate opens, whatever its abort signal says. */
function stubbornSender(name: string) {
  const state = { started: 0, sent: 0, gate: gate() }
  const tool = toolDefinition({ name, description: 'Send a text', inputSchema: z.object({}) }).server(async () => {
    state.started++
    await state.gate.opened
    state.sent++
    return { sent: true }
  })
  return { tool, state }
}

/** Prompts, aborts the turn while the tool waits on its gate, then lets the tool finish its side effect. */
async function abortWhileRunning(
  host: HarnessHost,
  harness: Harness,
  sessionId: string,
  state: ReturnType<typeof stubbornSender>['state'],
) {
  const session = host.open(harness, { sessionId })
  const { inputId } = await session.prompt('text them', { metadata: { case: sessionId } })
  await until(async () => state.started === 1, 'the tool to start')
  expect(await session.abort(inputId, 'the customer left')).toBe(true)
  await until(async () => records(await session.log.read(), 'harness.tool.result').length === 1, 'the aborted call to land')
  state.gate.open()
  await until(async () => state.sent === 1, 'the tool to finish its side effect')
  const [result] = records(await session.log.read(), 'harness.tool.result')
  expect(result).toMatchObject({ error: { code: 'aborted' } })
  return { session, inputId, toolCallId: result!.toolCallId as string, error: result!.error as { message: string } }
}

describe('a rerun keeps the never promise', () => {
  const hosts = useInProcessHosts()

  it("R19 a rerun never runs a 'never' call again whose turn was aborted while its tool ignored the abort and sent: the model sees the aborted result", async () => {
    const { tool, state } = stubbornSender('sendText')
    const harness = harnessOf('kept-abort', tool)
    const { host } = hosts.start(harness, 'kept-abort')
    const { session, inputId, error } = await abortWhileRunning(host, harness, 'k-1', state)

    expect(await session.rerun(inputId, { principal: 'ops@acme' })).toBe(true)
    const settled = await session.settled(inputId)
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(settled.text).toContain(error.message)
    expect(state.started).toBe(1)
    expect(state.sent).toBe(1)
    const log = await session.log.read()
    expect(records(log, 'harness.tool.started')).toHaveLength(1)
    expect(records(log, 'harness.tool.result')).toHaveLength(1)
    const [rerun] = records(log, 'harness.turn.rerun')
    expect(rerun).toMatchObject({ principal: 'ops@acme' })
    expect(rerun!.calls).toBeUndefined()
  })

  it("R19 host.replay (bulk) keeps an aborted 'never' call too: the tool does not run again", async () => {
    const { tool, state } = stubbornSender('sendText')
    const harness = harnessOf('kept-bulk', tool)
    const { host } = hosts.start(harness, 'kept-bulk')
    const { session, inputId, error } = await abortWhileRunning(host, harness, 'b-1', state)

    expect(await host.replay({ status: 'aborted' }, { principal: 'oncall' })).toEqual({ count: 1 })
    const settled = await session.settled(inputId)
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(settled.text).toContain(error.message)
    expect(state).toMatchObject({ started: 1, sent: 1 })
    expect(records(await session.log.read(), 'harness.turn.rerun')).toMatchObject([{ principal: 'oncall' }])
  })

  it('R19 rerun({ again }) runs a kept never call again on purpose, recorded with its principal; ids of no call of the turn are refused', async () => {
    const { tool, state } = stubbornSender('sendText')
    const harness = harnessOf('kept-again', tool)
    const { host } = hosts.start(harness, 'kept-again')
    const { session, inputId, toolCallId } = await abortWhileRunning(host, harness, 'a-1', state)

    // a call id the turn's last response does not hold: refused, nothing written
    const before = (await session.log.read()).length
    await expect(session.rerun(inputId, { again: ['no-such-call'] })).rejects.toBeInstanceOf(RerunCallError)
    await expect(session.rerun(inputId, { again: ['no-such-call'] })).rejects.toMatchObject({ code: 'rerun_call' })
    expect((await session.log.read()).length).toBe(before)
    expect((await session.settled(inputId)).outcome).toBe('aborted')

    expect(await session.rerun(inputId, { again: [toolCallId], principal: 'ops@acme', rerunId: 'again-1' })).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed', text: 'saw: {"sent":true}' })
    expect(state).toMatchObject({ started: 2, sent: 2 })
    const log = await session.log.read()
    expect(records(log, 'harness.turn.rerun')).toEqual([
      expect.objectContaining({ rerunId: 'again-1', principal: 'ops@acme', calls: [toolCallId], again: [toolCallId] }),
    ])
    expect(records(log, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])

    // its result is landed now: a rerun never runs it again, even when named (R19)
    await expect(session.rerun(inputId, { again: [toolCallId] })).rejects.toMatchObject({ code: 'rerun_call' })
  })

  it("R19 a 'never' call cancelled while it slept in its tool keeps its cancelled result on a rerun: its tool began", async () => {
    const state = { started: 0 }
    const tool = durableTool(
      toolDefinition({ name: 'remind', description: 'Remind later', inputSchema: z.object({}) }),
      async (_input, { step }) => {
        state.started++
        await step.sleep('wait', '1h')
        return { reminded: true }
      },
      { replay: 'never' },
    )
    const harness = harnessOf('kept-parked', tool)
    const { host } = hosts.start(harness, 'kept-parked')
    const session = host.open(harness, { sessionId: 'p-1' })
    const { inputId } = await session.prompt('remind me')
    await until(async () => records(await session.log.read(), 'harness.tool.suspended').length === 1, 'the call to park')
    expect(await session.abort(inputId, 'never mind')).toBe(true)
    const [result] = records(await session.log.read(), 'harness.tool.result')
    expect(result).toMatchObject({ error: { code: 'cancelled' } })

    // the aborted turn's job ends first (woken by its cancelled child, it finds the turn settled)
    const turns = host.queues().find((q) => q.kind === 'turns')!.queue
    await until(async () => (await turns.getJobState(turnJobId('p-1', inputId))) === 'completed', 'the aborted turn job to end')
    expect(await session.rerun(inputId)).toBe(true)
    const settled = await session.settled(inputId)
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(settled.text).toContain('cancelled')
    expect(state.started).toBe(1)
    expect(records(await session.log.read(), 'harness.tool.started')).toHaveLength(1)
  })

  it("R19 of two 'never' calls of an aborted turn, the one under way keeps its aborted result; the one waiting for its limit (never begun) runs again", async () => {
    const { tool, state } = stubbornSender('sendText')
    const harness = defineHarness({
      name: 'kept-limit',
      adapter: scriptedModel([
        {
          toolCalls: [
            { name: 'sendText', input: {} },
            { name: 'sendText', input: {} },
          ],
        },
        ({ messages }) => ({
          text: `saw: ${messages
            .filter((m) => m.role === 'tool')
            .map((m) => String(m.content))
            .join(' | ')}`,
        }),
      ]),
      tools: [tool],
      limits: { tools: { sendText: { concurrency: 1 } } },
    })
    const { host } = hosts.start(harness, 'kept-limit')
    const session = host.open(harness, { sessionId: 'l-1' })
    const { inputId } = await session.prompt('text them twice')
    await until(
      async () => state.started === 1 && records(await session.log.read(), 'harness.tool.suspended').length === 1,
      'one call to run and the other to wait for its limit',
    )
    expect(await session.abort(inputId, 'stop')).toBe(true)
    await until(async () => records(await session.log.read(), 'harness.tool.result').length === 2, 'both calls to land')
    state.gate.open()
    await until(async () => state.sent === 1, 'the running tool to finish its side effect')
    const results = records(await session.log.read(), 'harness.tool.result')
    const code = (r: (typeof results)[number]) => (r.error as { code: string }).code
    const ran = results.find((r) => code(r) === 'aborted')!
    const waited = results.find((r) => code(r) === 'cancelled')!

    expect(await session.rerun(inputId)).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed' })
    expect(state).toMatchObject({ started: 2, sent: 2 })
    const log = await session.log.read()
    expect(records(log, 'harness.turn.rerun')).toMatchObject([{ calls: [waited.toolCallId] }])
    const started = records(log, 'harness.tool.started')
    expect(started.filter((r) => r.toolCallId === ran.toolCallId)).toHaveLength(1)
    expect(started.filter((r) => r.toolCallId === waited.toolCallId).map((r) => r.reason)).toEqual(['fresh', 'rerun'])
  })

  it("R19 a 'never' call that timed out while its tool went on and sent keeps its timeout error on a rerun", async () => {
    const { tool, state } = stubbornSender('sendText')
    const provider = { down: true }
    const harness = defineHarness({
      name: 'kept-timeout',
      adapter: scriptedModel([
        { toolCalls: [{ name: 'sendText', input: {} }] },
        ({ messages }) => {
          if (provider.down) throw new Error('provider unavailable')
          return { text: `saw: ${String(messages.at(-1)?.content)}` }
        },
      ]),
      tools: [withTimeout(tool, 200)],
    })
    const { host } = hosts.start(harness, 'kept-timeout')
    const session = host.open(harness, { sessionId: 't-1' })
    const { inputId } = await session.prompt('text them')
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'failed' })
    const [result] = records(await session.log.read(), 'harness.tool.result')
    expect(result).toMatchObject({ error: { code: 'timeout' } })
    state.gate.open()
    await until(async () => state.sent === 1, 'the tool to finish its side effect')

    provider.down = false
    expect(await session.rerun(inputId)).toBe(true)
    const settled = await session.settled(inputId)
    expect(settled).toMatchObject({ outcome: 'completed' })
    // the model is shown the same timeout error (as JSON text)
    expect(settled.text).toContain('did not finish within 200 ms')
    expect(state).toMatchObject({ started: 1, sent: 1 })
  })

  it('R19 a never call whose tool never began (its input was invalid) runs again on a rerun', async () => {
    const state = { started: 0, modelDown: true }
    const tool = toolDefinition({ name: 'sendText', description: 'Send a text', inputSchema: z.object({ to: z.string() }) }).server(
      async () => {
        state.started++
        return { sent: true }
      },
    )
    const harness = defineHarness({
      name: 'kept-invalid',
      adapter: scriptedModel([
        { toolCalls: [{ name: 'sendText', input: { to: 5 } }] },
        () => {
          if (state.modelDown) throw new Error('provider unavailable')
          return { text: 'done' }
        },
      ]),
      tools: [tool],
    })
    const { host } = hosts.start(harness, 'kept-invalid')
    const session = host.open(harness, { sessionId: 'i-1' })
    const { inputId } = await session.prompt('text them')
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'failed' })
    expect(records(await session.log.read(), 'harness.tool.result')).toMatchObject([{ error: { code: 'invalid_tool_input' } }])
    state.modelDown = false
    expect(await session.rerun(inputId)).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed' })
    const log = await session.log.read()
    expect(records(log, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(state.started).toBe(0)
  })

  it("R19 a 'safe' call aborted mid-way runs again on a rerun: its finished steps return their stored values, fn not called again", async () => {
    const state = { a: 0, b: 0, gate: gate(), inB: false }
    const tool = durableTool(
      toolDefinition({ name: 'ship', description: 'Ship an order', inputSchema: z.object({}) }),
      async (_input, { step }) => {
        const label = await step.do('label', async () => {
          state.a++
          return { label: `L-${state.a}` }
        })
        await step.do('dispatch', async () => {
          state.inB = true
          await state.gate.opened
          state.b++
        })
        return { shipped: label.label }
      },
    )
    const harness = harnessOf('safe-abort', tool)
    const { host } = hosts.start(harness, 'safe-abort')
    const session = host.open(harness, { sessionId: 'sa-1' })
    const { inputId } = await session.prompt('ship it')
    await until(async () => state.inB, 'the second step to start')
    expect(await session.abort(inputId, 'stop')).toBe(true)
    await until(async () => records(await session.log.read(), 'harness.tool.result').length === 1, 'the aborted call to land')
    state.gate.open()
    await until(async () => state.b === 1, 'the cut step to end')

    expect(await session.rerun(inputId)).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed', text: 'saw: {"shipped":"L-1"}' })
    // the finished step came from storage; the step that was under way ran again (it stored no value)
    expect(state).toMatchObject({ a: 1, b: 2 })
    const log = await session.log.read()
    expect(records(log, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(records(log, 'harness.tool.step').map((r) => r.name)).toEqual(['label', 'dispatch'])
  })
})

describe("the call state's t: what a rerun keeps of a 'never' call (landResult, parkCall, cancelCall)", () => {
  let redis: RedisClient
  let prefix: string
  beforeAll(async () => {
    redis = rigClient(await getRedisUrl())
    prefix = uniquePrefix('kept-state')
  })
  afterAll(async () => {
    redis.disconnect()
    await cleanupPrefix(await getRedisUrl(), prefix)
  })
  const stateOf = async (log: SessionLog, id: string) => JSON.parse((await redis.hget(log.stream.keys.calls, id))!) as { t?: 1 }
  const error = (code: string) => ({ error: { message: code, code } })

  it("R19 t: set when nobody knows whether a never call's tool finished, by a park inside its tool, kept by a cancel; never on a safe call", async () => {
    const log = new SessionLog(redis, prefix, 's1')
    // cut, aborted, timed out: unknown
    await log.calls.beginCall('cut', 'notify', 'never')
    await log.calls.landResult({ toolCallId: 'cut', epoch: 1 }, 'notify', error('interrupted'), 'unknown')
    expect((await stateOf(log, 'cut')).t).toBe(1)
    // the tool's own error (or one from before it ran): cleared, also after a park in the tool set it
    await log.calls.beginCall('own', 'notify', 'never')
    await log.calls.parkCall({ toolCallId: 'own', epoch: 1 }, 'sleep', Date.now() + 60_000)
    expect((await stateOf(log, 'own')).t).toBe(1)
    await log.calls.beginCall('own', 'notify', 'never')
    await log.calls.landResult({ toolCallId: 'own', epoch: 2 }, 'notify', error('tool_error'))
    expect((await stateOf(log, 'own')).t).toBeUndefined()
    // a park for its limit or its approval: the tool did not begin; a cancel keeps what the park said
    await log.calls.beginCall('queued', 'notify', 'never')
    await log.calls.parkCall({ toolCallId: 'queued', epoch: 1 }, 'limit', Date.now() + 60_000, { inTool: false })
    await log.calls.cancelCall({ toolCallId: 'queued', epoch: 1 }, 'notify', [], error('cancelled').error)
    expect((await stateOf(log, 'queued')).t).toBeUndefined()
    await log.calls.beginCall('slept', 'notify', 'never')
    await log.calls.parkCall({ toolCallId: 'slept', epoch: 1 }, 'sleep', Date.now() + 60_000)
    await log.calls.cancelCall({ toolCallId: 'slept', epoch: 1 }, 'notify', [], error('cancelled').error)
    expect((await stateOf(log, 'slept')).t).toBe(1)
    // a cancel at the begin of a resumed call: as its park said
    await log.calls.beginCall('resumed', 'notify', 'never')
    await log.calls.parkCall({ toolCallId: 'resumed', epoch: 1 }, 'sleep', Date.now() + 60_000)
    await log.calls.beginCall('resumed', 'notify', 'never')
    await log.calls.landResult({ toolCallId: 'resumed', epoch: 2 }, 'notify', error('cancelled'), 'asBefore')
    expect((await stateOf(log, 'resumed')).t).toBe(1)
    // a safe call's state never holds it (it runs again whatever ended it)
    await log.calls.beginCall('safe', 'checkout', 'safe')
    await log.calls.parkCall({ toolCallId: 'safe', epoch: 1 }, 'sleep', Date.now() + 60_000)
    await log.calls.beginCall('safe', 'checkout', 'safe')
    await log.calls.landResult({ toolCallId: 'safe', epoch: 2 }, 'checkout', error('aborted'), 'unknown')
    expect((await stateOf(log, 'safe')).t).toBeUndefined()
  })
})
