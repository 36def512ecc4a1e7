// Measurement 2: our path against raw BullMQ (bullmq.ts), interleaved in one run so a change of
// machine load hits both: session.runTool of a durable tool with 3 trivial steps (one at a time, and
// with concurrent callers, and the CPU Node and Redis spend a call in those loops) against a no-op
// job's round trip; durable tool calls (one step each) per second draining pre-enqueued work at
// several worker concurrencies, as batches of 1 (runTool) and of 10 (a turn whose scripted model asks
// for 10 calls at once), against draining no-op jobs, and the batches of 1 against the same calls
// drained by the design's floor (floor.ts).
// In-process workers (host.startWorkers, no sweeper).
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, WaitTimeoutError } from '../../src/index.js'
import type { HarnessHost } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import {
  benchPrefix,
  deletePrefix,
  drainWith,
  pool,
  profileCommands,
  serverUsec,
  silentLogger,
  stderrProgress,
  summarize,
  timeEach,
  withOwnCpu,
} from './lib.js'
import type { CommandProfile, OwnCpu, Progress, Summary } from './lib.js'
import { perJob, startRawBullmq } from './bullmq.js'
import { startFloorWorker } from './floor.js'
import { SessionLog } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'

const BATCH = 10

/** A durable tool of 3 trivial steps: the runTool of rows 2a, 2b, 2i and 2j (latency.ts). */
export const three = durableTool(
  toolDefinition({ name: 'three', description: 'Three trivial steps', inputSchema: z.object({}) }),
  async (_input, { step }) => {
    await step.do('a', async () => 1)
    await step.do('b', async () => 2)
    await step.do('c', async () => 3)
    return { ok: true }
  },
)

const one = durableTool(
  toolDefinition({ name: 'one', description: 'One trivial step', inputSchema: z.object({}) }),
  async (_input, { step }) => {
    await step.do('a', async () => 1)
    return { ok: true }
  },
)

/** Model call 0 of a session asks for BATCH calls of `one` at once; call 1 answers. */
const toolsHarness = defineHarness({
  name: 'bench-tools',
  adapter: scriptedModel([{ toolCalls: Array.from({ length: BATCH }, () => ({ name: 'one', input: {} })) }, { text: 'done' }]),
  tools: [three, one],
})

interface DrainRun {
  concurrency: number
  /** Tool calls (raw: no-op jobs) over all repetitions. */
  calls: number
  /** Sum over repetitions of the ms from starting the workers to the last completion. */
  ms: number
  perSec: number
  /** calls/s of each repetition. */
  reps: number[]
  /** redis-server CPU µs per call (INFO cpu around the drains; only with a private Redis). */
  serverUsecPerCall?: number
}

/** CPU µs a call: this Node process (callers and workers, user + system) and redis-server (INFO cpu). */
export interface CallCpu {
  nodeUs: number
  /** Absent with a shared Redis: its CPU includes other clients'. */
  serverUs?: number
}

export interface ToolCallsResult {
  callers: number
  raw: {
    roundTrip: Summary
    /** Round trips/s with `callers` callers, each add + waitUntilFinished in a loop. */
    roundTripsPerSec: number
    /** Own CPU µs a round trip in those loops (redis-server's only with a private Redis). */
    roundTripCpu: CallCpu
    drain: DrainRun[]
    profile: { roundTrip: CommandProfile; drain: CommandProfile }
  }
  ours: {
    /** runTool of the 3-step tool. */
    runTool: Summary
    runToolPerSec: number
    /** Own CPU µs a runTool call in the loops with `callers` callers, as raw.roundTripCpu. */
    runToolCpu: CallCpu
    /** 1-step calls: batches of 1 (runTool) and of 10 (turns), by concurrency. */
    drain1: DrainRun[]
    drain10: DrainRun[]
    /** One runTool call; draining at concurrency 10, per tool call (enqueue not included). */
    profile: { runTool: CommandProfile; drain1: CommandProfile; drain10: CommandProfile }
  }
  /**
   * The same 1-step calls as drain1, drained by floor.ts's bare worker (only the scripts a call needs),
   * in the same reps; and 2a/2b's runTool calls of the 3-step tool served by that worker (our runTool,
   * none of our worker), in the same rounds: the lone-call p50 and the calls/s the design allows.
   */
  floor: { drain: DrainRun[]; profile: CommandProfile; runTool: Summary; runToolPerSec: number }
}

export interface ToolCallsOptions {
  quick?: boolean
  /** REDIS_URL is shared: commandstats would count other clients' commands too. */
  sharedRedis?: boolean
  concurrencies?: number[]
  callers?: number
  progress?: Progress
}

export async function measureToolCalls(redisUrl: string, options: ToolCallsOptions = {}): Promise<ToolCallsResult> {
  const progress = options.progress ?? stderrProgress
  const callers = options.callers ?? 20
  const quick = options.quick ?? false
  const prefix = benchPrefix('tools')
  const host = createHarnessHost({ redis: redisUrl, harnesses: [toolsHarness], prefix, logger: silentLogger })
  const raw = await startRawBullmq(redisUrl, callers, progress)
  // the floor's runTool callers: a host of their own (no workers), served by floor.ts's bare worker
  const floorPrefix = benchPrefix('tools-floor')
  const floorHost = createHarnessHost({ redis: redisUrl, harnesses: [toolsHarness], prefix: floorPrefix, logger: silentLogger })
  const floorConnection = new Redis(redisUrl, { maxRetriesPerRequest: null })
  try {
    // ---- round trips, raw, ours and the floor's interleaved in rounds (worker concurrency = callers on each) ----
    const workers = host.startWorkers({ concurrency: callers, sweepEveryMs: 0 })
    const call = (sessionId: string) => host.open(toolsHarness, { sessionId }).runTool({ name: 'three', input: {} })
    const floorLib = { SessionLog, bullPrefix, toolQueueName }
    const floorWorker = startFloorWorker(floorLib, {
      redisUrl,
      prefix: floorPrefix,
      harness: toolsHarness.name,
      concurrency: callers,
      connection: floorConnection,
      steps: 3,
      autoPipelining: false,
    })
    const floorCall = (sessionId: string) => floorHost.open(toolsHarness, { sessionId }).runTool({ name: 'three', input: {} })
    progress('[ours] warm-up')
    // V8 compiles a hot function after many runs: the first 1,000 calls ran at about 60% of the steady
    // rate (the longer path warms up later), so all three are measured warm (as a worker that has run
    // a while): the rounds' own sequence, one at a time then with callers, three times (after one, the
    // switch between the two still invalidated optimized code: docs/decisions/bench-method.md)
    const warm = quick ? 300 : 2000
    for (let cycle = 0; cycle < 3; cycle++) {
      for (let i = 0; i < 200; i++) await call('warm')
      for (let i = 0; i < 200; i++) await floorCall('warm')
      for (let i = 0; i < 200; i++) await raw.roundTrip()
      await pool(warm, callers, (i) => call(`warm-${cycle}-${i % callers}`))
      await pool(warm, callers, (i) => floorCall(`warm-${cycle}-${i % callers}`))
      await pool(warm, callers, () => raw.roundTrip())
    }
    const rounds = 10
    const n = quick ? 30 : 200
    const m = quick ? 100 : 600
    const rawSamples: number[] = []
    const ourSamples: number[] = []
    const floorSamples: number[] = []
    let rawMs = 0
    let ourMs = 0
    let floorMs = 0
    const stats = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
    const rawCpu: OwnCpu = { userUs: 0, systemUs: 0, serverUs: 0 }
    const ourCpu: OwnCpu = { userUs: 0, systemUs: 0, serverUs: 0 }
    // the loops with callers, timed and their CPU summed into `into`
    const loop = async (into: OwnCpu, fn: () => Promise<number>) => {
      const { result: ms, cpu } = await withOwnCpu(stats, fn)
      into.userUs += cpu.userUs
      into.systemUs += cpu.systemUs
      into.serverUs += cpu.serverUs
      return ms
    }
    const sequential = (into: number[], fn: () => Promise<unknown>) => timeEach(into, n, fn)
    for (let r = 0; r < rounds; r++) {
      progress(
        `[round trips] round ${r + 1}/${rounds}: raw BullMQ, runTool (3 steps) and the floor's, ${n} one at a time, ${m} with ${callers} callers`,
      )
      for (const which of r % 2 === 0 ? ['raw', 'ours', 'floor'] : ['floor', 'ours', 'raw']) {
        if (which === 'floor') {
          // no CPU figure: the floor's worker shares nothing with 2i's question
          await sequential(floorSamples, () => floorCall('rt'))
          floorMs += await pool(m, callers, (i) => floorCall(`rt-${i % callers}`))
        } else if (which === 'raw') {
          await sequential(rawSamples, () => raw.roundTrip())
          rawMs += await loop(rawCpu, () => pool(m, callers, () => raw.roundTrip()))
        } else {
          await sequential(ourSamples, () => call('rt'))
          ourMs += await loop(ourCpu, () => pool(m, callers, (i) => call(`rt-${i % callers}`)))
        }
      }
    }
    progress('[round trips] command profiles (MONITOR): one raw round trip, 200 raw jobs drained, one runTool call')
    const rawProfile = await raw.profile()
    const runToolProfile = await profileCommands(redisUrl, prefix, 50, () => call('profile'))
    await workers.close()
    await floorWorker.close()

    // ---- drain pre-enqueued work at each concurrency: raw, batches of 1, batches of 10, alternating ----
    const reps = quick ? 1 : 2
    // Redis-side time of a drain: the only traffic then is the drain's (a private Redis)
    const serverTimed = async (usec: number[], fn: () => Promise<number>) => {
      const before = await serverUsec(stats)
      const ms = await fn()
      usec.push((await serverUsec(stats)) - before)
      return ms
    }
    const rawDrain: DrainRun[] = []
    const drain1: DrainRun[] = []
    const drain10: DrainRun[] = []
    const floorDrain: DrainRun[] = []
    const drainFloor = (concurrency: number, jobs: number) =>
      drainWith(
        () => startFloorWorker(floorLib, { redisUrl, prefix, harness: toolsHarness.name, concurrency, connection: floorConnection }),
        'tools.',
        jobs,
      )
    for (const concurrency of options.concurrencies ?? [1, 10, 50]) {
      const low = concurrency === 1
      const size = quick
        ? { raw: low ? 1000 : 3000, one: low ? 500 : 1500, turns: low ? 50 : 150 }
        : { raw: low ? 3000 : 10000, one: low ? 1500 : 5000, turns: low ? 150 : 500 }
      const runs = { raw: [] as number[], one: [] as number[], ten: [] as number[], floor: [] as number[] }
      const usec = { raw: [] as number[], one: [] as number[], ten: [] as number[], floor: [] as number[] }
      // one drain of each kind that is not measured, at a third of the size: the first drains at a
      // concurrency still compile their path (V8's optimizing compiler shares the 2 cores with the
      // drain), ours the most, as --against's sides found (WARM_DRAINS, againstSide.ts): our first
      // drain at 50 ran 10-25% under our second, the floor's did not (docs/decisions/bench-method.md)
      const warm = { raw: Math.ceil(size.raw / 3), one: Math.ceil(size.one / 3), turns: Math.ceil(size.turns / 3) }
      const drainOnce = async (which: 'raw' | 'one' | 'floor' | 'ten', rep: number | 'warm') => {
        const measured = rep !== 'warm'
        const n = measured ? size : warm
        const timed = (usecOf: number[], runsOf: number[], fn: () => Promise<number>) =>
          measured ? serverTimed(usecOf, fn).then((ms) => void runsOf.push(ms)) : fn().then(() => {})
        const what = measured ? '' : ' (warm-up, not measured)'
        if (which === 'floor') {
          await enqueueRunTool(host, `fl-${concurrency}-${rep}`, n.one)
          progress(`[drain] concurrency ${concurrency}: ${n.one} runTool calls (1 step) drained by the floor worker${what}`)
          return timed(usec.floor, runs.floor, () => drainFloor(concurrency, n.one))
        }
        if (which === 'raw') {
          progress(`[drain] concurrency ${concurrency}: ${n.raw} raw BullMQ no-op jobs${what}`)
          const name = await raw.prefill(n.raw)
          return timed(usec.raw, runs.raw, () => raw.drain(name, concurrency, n.raw))
        }
        if (which === 'one') {
          await enqueueRunTool(host, `d1-${concurrency}-${rep}`, n.one)
          progress(`[drain] concurrency ${concurrency}: ${n.one} runTool calls (1 step)${what}`)
          return timed(usec.one, runs.one, () => drain(host, concurrency, 'tools.', n.one))
        }
        const tag = `d10-${concurrency}-${rep}`
        const inputIds = await enqueueTurns(host, tag, n.turns)
        progress(`[drain] concurrency ${concurrency}: ${n.turns} turns x ${BATCH} calls (1 step)${what}`)
        await timed(usec.ten, runs.ten, () => drain(host, concurrency, 'turns.', n.turns))
        await checkTurns(host, tag, inputIds)
      }
      for (const which of ['raw', 'one', 'floor', 'ten'] as const) await drainOnce(which, 'warm')
      for (let rep = 0; rep < reps; rep++) {
        const order = rep % 2 === 0 ? (['raw', 'one', 'floor', 'ten'] as const) : (['ten', 'floor', 'one', 'raw'] as const)
        for (const which of order) await drainOnce(which, rep)
      }
      const server = (u: number[], calls: number) =>
        options.sharedRedis ? {} : { serverUsecPerCall: Math.round(u.reduce((a, b) => a + b, 0) / calls) }
      rawDrain.push({ ...drainRun(concurrency, size.raw, runs.raw), ...server(usec.raw, size.raw * reps) })
      drain1.push({ ...drainRun(concurrency, size.one, runs.one), ...server(usec.one, size.one * reps) })
      drain10.push({ ...drainRun(concurrency, size.turns * BATCH, runs.ten), ...server(usec.ten, size.turns * BATCH * reps) })
      floorDrain.push({ ...drainRun(concurrency, size.one, runs.floor), ...server(usec.floor, size.one * reps) })
    }
    stats.disconnect()
    await enqueueRunTool(host, 'pf', 200)
    const floorProfile = perJob(await profileCommands(redisUrl, prefix, 1, () => drainFloor(10, 200)), 200)
    progress('[drain] command profiles (MONITOR): 200 runTool calls and 20 turns x 10 calls at concurrency 10')
    await enqueueRunTool(host, 'p1', 200)
    const drain1Profile = perJob(await profileCommands(redisUrl, prefix, 1, () => drain(host, 10, 'tools.', 200)), 200)
    const inputIds = await enqueueTurns(host, 'p10', 20)
    const drain10Profile = perJob(await profileCommands(redisUrl, prefix, 1, () => drain(host, 10, 'turns.', 20)), 20 * BATCH)
    await checkTurns(host, 'p10', inputIds)
    const perCall = (cpu: OwnCpu): CallCpu => ({
      nodeUs: (cpu.userUs + cpu.systemUs) / (rounds * m),
      ...(options.sharedRedis ? {} : { serverUs: cpu.serverUs / (rounds * m) }),
    })
    return {
      callers,
      raw: {
        roundTrip: summarize(rawSamples),
        roundTripsPerSec: ((rounds * m) / rawMs) * 1000,
        roundTripCpu: perCall(rawCpu),
        drain: rawDrain,
        profile: rawProfile,
      },
      ours: {
        runTool: summarize(ourSamples),
        runToolPerSec: ((rounds * m) / ourMs) * 1000,
        runToolCpu: perCall(ourCpu),
        drain1,
        drain10,
        profile: { runTool: runToolProfile, drain1: drain1Profile, drain10: drain10Profile },
      },
      floor: {
        drain: floorDrain,
        profile: floorProfile,
        runTool: summarize(floorSamples),
        runToolPerSec: ((rounds * m) / floorMs) * 1000,
      },
    }
  } finally {
    floorConnection.disconnect()
    await raw.close()
    await host.close()
    await floorHost.close()
    await deletePrefix(redisUrl, prefix)
    await deletePrefix(redisUrl, floorPrefix)
  }
}

function drainRun(concurrency: number, perRep: number, ms: number[]): DrainRun {
  const total = ms.reduce((a, b) => a + b, 0)
  const calls = perRep * ms.length
  return { concurrency, calls, ms: total, perSec: (calls / total) * 1000, reps: ms.map((x) => (perRep / x) * 1000) }
}

const enqueueOnly = (e: unknown) => {
  if (!(e instanceof WaitTimeoutError)) throw e
}

// enqueue only: a zero wait returns at once (WaitTimeoutError); the calls go on durably
async function enqueueRunTool(host: HarnessHost, tag: string, calls: number): Promise<void> {
  await pool(calls, 200, (i) =>
    host
      .open(toolsHarness, { sessionId: `${tag}-${Math.floor(i / 10)}` })
      .runTool({ name: 'one', input: {} }, { timeoutMs: 0 })
      .catch(enqueueOnly),
  )
}

async function enqueueTurns(host: HarnessHost, tag: string, turns: number): Promise<string[]> {
  const inputIds: string[] = []
  await pool(turns, 200, async (i) => {
    inputIds[i] = (await host.open(toolsHarness, { sessionId: `${tag}-${i}` }).prompt('go')).inputId
  })
  return inputIds
}

/** Starts workers on pre-enqueued work; ms from their start to the last job of `queue` ('tools.' for runTool calls, 'turns.' for turns) done. */
function drain(host: HarnessHost, concurrency: number, queue: 'tools.' | 'turns.', jobs: number): Promise<number> {
  return drainWith(() => host.startWorkers({ concurrency, sweepEveryMs: 0 }), queue, jobs)
}

async function checkTurns(host: HarnessHost, tag: string, inputIds: string[]): Promise<void> {
  for (const i of [0, inputIds.length - 1]) {
    const settled = await host.open(toolsHarness, { sessionId: `${tag}-${i}` }).settled(inputIds[i]!, { timeoutMs: 5_000 })
    if (settled.outcome !== 'completed' || settled.text !== 'done')
      throw new Error(`calls bench: turn ${i} settled ${JSON.stringify(settled)}`)
  }
}
