// A worker set of this process crashed as by SIGKILL (the testing kit's env.crash, issue 58): its
// attempts stop before their next side effect and write nothing more, its workers stop at once, and
// its jobs move back to wait at once, so a new worker set runs them again and classifies the cut as
// after a real crash. The harness's lock is 8 s: a recovery well under it was not the lock's expiry.
import { toolDefinition } from '@tanstack/ai'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, type Replay, type WorkersHandle } from '../../src/index.js'
import { CRASH_WORKERS } from '../../src/harness/crashWorkers.js'
import { scriptedModel } from '../../src/testing/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'
import { cleanupPrefix, uniquePrefix } from '../rig.js'

const LOCK_MS = 8_000
/** The window between the two steps, and the crashed turn's model call: the crashed attempts go on for this long. */
const PAUSE_MS = 1_500
const LOCK_LOST = 'attempt lost its job lock to another worker; it stopped before its next side effect and wrote nothing more'
const SUPERSEDED = 'attempt was superseded by a newer one; it wrote nothing more'
const TURN_LOST = 'turn attempt lost its job lock to another worker; it made no model call and wrote nothing more'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** How many times each step's fn ran, by `<id>:<step>`. */
const runs = new Map<string, number>()
const ran = (key: string) => runs.set(key, (runs.get(key) ?? 0) + 1)

const twoSteps = (name: string, replay: Replay) =>
  durableTool(
    toolDefinition({
      name,
      description: 'Two steps, a pause between them',
      inputSchema: z.object({ id: z.string(), pauseMs: z.number(), bMs: z.number().optional() }),
    }),
    async ({ id, pauseMs, bMs }, { step }) => {
      const a = await step.do('a', async () => (ran(`${id}:a`), `a-${id}`))
      await sleep(pauseMs)
      const b = await step.do('b', async () => {
        ran(`${id}:b`)
        if (bMs) await sleep(bMs)
        ran(`${id}:b returned`)
        return `b-${id}`
      })
      return { a, b }
    },
    { replay },
  )

/**
 * The model's call after the tool's result: the first one waits PAUSE_MS (a window to crash the turn
 * inside it) and answers 'late'; a later one waits twice as long, so the crashed call answers first.
 */
let finalCalls = 0
let inModelCall: () => void = () => {}
const toolCall = { toolCalls: [{ name: 'safeSteps', input: { id: 'turn', pauseMs: 0 }, id: 'turn-call' }] }
const script = scriptedModel([toolCall, { text: 'done' }])
const crashedScript = scriptedModel([toolCall, { text: 'late' }])
const model: typeof script = {
  ...script,
  async *chatStream(request) {
    if (!request.messages.some((m) => m.role === 'tool')) return yield* script.chatStream(request)
    const n = finalCalls++
    if (n === 0) inModelCall()
    await sleep(n === 0 ? PAUSE_MS : 2 * PAUSE_MS)
    yield* (n === 0 ? crashedScript : script).chatStream(request)
  },
}

const kit = defineHarness({
  name: 'crashKit',
  adapter: model,
  tools: [twoSteps('safeSteps', 'safe'), twoSteps('neverSteps', 'never')],
  durability: { lockMs: LOCK_MS },
})

/** Calls the handle's crash method as the testing kit does: a symbol, not in the public types. */
async function crash(workers: WorkersHandle): Promise<void> {
  const method: unknown = Reflect.get(workers, CRASH_WORKERS)
  if (typeof method !== 'function') throw new Error('the workers handle has no crash method')
  await Reflect.apply(method, workers, [])
}

describe('a worker set crashed between two steps (env.crash)', () => {
  const hosts = useInProcessHosts()

  /** A host of the kit harness whose warnings are kept, and its first worker set. */
  function start(label: string) {
    const prefix = uniquePrefix(label)
    const lines: Array<Record<string, unknown>> = []
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    const host = createHarnessHost({ redis: hosts.url(), harnesses: [kit], prefix, logger })
    hosts.defer(() => cleanupPrefix(hosts.url(), prefix))
    hosts.defer(() => host.close())
    const startWorkers = () => host.startWorkers({ concurrency: 4, sweepEveryMs: 0 })
    return { host, lines, startWorkers, first: startWorkers() }
  }

  it("replay 'safe': the next run returns the first step's stored value and runs the second once, without waiting for the lock", async () => {
    const { host, lines, startWorkers, first } = start('crash-safe')
    expect(Object.getOwnPropertyDescriptor(first, CRASH_WORKERS)?.enumerable).toBe(false)
    const session = host.open(kit, { sessionId: 'crash-safe' })
    const run = session.runTool({ name: 'safeSteps', input: { id: 'safe', pauseMs: PAUSE_MS }, toolCallId: 'safe-call' })
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    const crashedAt = Date.now()
    await crash(first)
    startWorkers()
    expect(await run).toEqual({ a: 'a-safe', b: 'b-safe' })
    expect(Date.now() - crashedAt).toBeLessThan(LOCK_MS)
    // the crashed attempt wakes from its pause and stops before step b: nothing more of it runs or is written
    await until(async () => lines.some((l) => l.msg === LOCK_LOST && l.toolCallId === 'safe-call'), 'the crashed attempt to stop')
    expect([runs.get('safe:a'), runs.get('safe:b')]).toEqual([1, 1])
    const entries = await session.log.read()
    expect(records(entries, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(records(entries, 'harness.tool.step').map((r) => r.name)).toEqual(['a', 'b'])
    expect(records(entries, 'harness.tool.result')).toMatchObject([{ toolCallId: 'safe-call', result: { a: 'a-safe', b: 'b-safe' } }])
    // the crashed set's close has nothing left to wait for
    expect(await first.close()).toEqual({ forced: [] })
  }, 60_000)

  it("replay 'never': the next run lands the interrupted tool error once; step b never runs", async () => {
    const { host, lines, startWorkers, first } = start('crash-never')
    const session = host.open(kit, { sessionId: 'crash-never' })
    const run = session.runTool({ name: 'neverSteps', input: { id: 'never', pauseMs: PAUSE_MS }, toolCallId: 'never-call' })
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    const crashedAt = Date.now()
    await crash(first)
    startWorkers()
    await expect(run).rejects.toMatchObject({ toolError: { code: 'interrupted' } })
    expect(Date.now() - crashedAt).toBeLessThan(LOCK_MS)
    await until(async () => lines.some((l) => l.msg === LOCK_LOST && l.toolCallId === 'never-call'), 'the crashed attempt to stop')
    expect([runs.get('never:a'), runs.get('never:b')]).toEqual([1, undefined])
    const entries = await session.log.read()
    expect(records(entries, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'cut'])
    expect(records(entries, 'harness.tool.step').map((r) => r.name)).toEqual(['a'])
    expect(records(entries, 'harness.tool.result')).toMatchObject([{ toolCallId: 'never-call', error: { code: 'interrupted' } }])
  }, 60_000)

  it("a crash while step b's fn runs: its value, returned after the crash, is refused; the next run runs step b again", async () => {
    const { host, lines, startWorkers, first } = start('crash-in-fn')
    const session = host.open(kit, { sessionId: 'crash-in-fn' })
    const run = session.runTool({ name: 'safeSteps', input: { id: 'fn', pauseMs: 0, bMs: PAUSE_MS }, toolCallId: 'fn-call' })
    await until(async () => runs.get('fn:b') === 1, "step b's fn to start")
    await crash(first)
    // the fn returns, and its step's write is sent, before any new attempt begins: the crash's fence refuses it
    await until(async () => runs.get('fn:b returned') === 1, "the crashed step b's fn to return")
    await until(async () => lines.some((l) => (l.msg === LOCK_LOST || l.msg === SUPERSEDED) && l.toolCallId === 'fn-call'), 'it to stop')
    startWorkers()
    expect(await run).toEqual({ a: 'a-fn', b: 'b-fn' })
    expect([runs.get('fn:a'), runs.get('fn:b')]).toEqual([1, 2])
    const entries = await session.log.read()
    expect(records(entries, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(records(entries, 'harness.tool.step').map((r) => r.name)).toEqual(['a', 'b'])
  }, 60_000)

  it('a turn crashed inside its model call settles completed on the new worker set; the crashed call logs no response', async () => {
    const { host, lines, startWorkers, first } = start('crash-turn')
    const session = host.open(kit, { sessionId: 'crash-turn' })
    const entered = new Promise<void>((resolve) => (inModelCall = resolve))
    const { inputId } = await session.prompt('check out')
    await entered
    const crashedAt = Date.now()
    await crash(first)
    startWorkers()
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled.outcome).toBe('completed')
    expect(Date.now() - crashedAt).toBeLessThan(LOCK_MS)
    // the crashed model call answers first ('late'), after the crash: its response is not logged, the attempt ends
    await until(async () => lines.some((l) => l.msg === TURN_LOST && l.inputId === inputId), 'the crashed turn attempt to stop')
    const entries = await session.log.read()
    expect(records(entries, 'harness.model.response')).toHaveLength(2)
    expect(records(entries, 'harness.input.settled')).toMatchObject([{ inputId, outcome: 'completed', text: 'done' }])
    expect(records(entries, 'harness.tool.result')).toMatchObject([{ toolCallId: 'turn-call', result: { a: 'a-turn', b: 'b-turn' } }])
    expect([runs.get('turn:a'), runs.get('turn:b')]).toEqual([1, 1])
  }, 60_000)
})
