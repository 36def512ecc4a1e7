// A million waiting calls on one Redis (issue 52, rows 10a–10f): parks N calls (step.sleep for days,
// step.ask, step.waitForEvent; the first half 1 a session, the second half 100 a session) on a private
// redis-server, then measures Redis used_memory a call, a sweeper pass (time and commands, at N and at
// a small N), wake-up lateness of short sleeps whose time comes while the N wait, host.stats() and the
// dashboard's first pages (HTTP GET, with a principal).
//   npm run bench -- --only million [--calls N] [--quick]     (not in the default run)
//   npx tsx scripts/bench/million.ts [--calls 1000000] [--quick] [--workers 2] [--park-budget <seconds>]
// --park-budget: parking stops after this long (half for each half) and the figures are of the calls
// parked by then (the output says how many).
// Always its own redis-server (--save '' --appendonly no, hz 100), stopped at the end, as are its workers.
import os from 'node:os'
import { pathToFileURL } from 'node:url'
import { Redis } from 'ioredis'
import { createHarnessHost, WaitTimeoutError, type HarnessHost } from '../../src/index.js'
import { serveDashboard } from '../../src/dashboard/index.js'
import { indexKeys, type RecordOf } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { spawnWorker, startRedisServer, type WorkerProcess } from '../../src/testing/index.js'
import {
  benchPrefix,
  commandStats,
  pause,
  pool,
  redisVersion,
  silentLogger,
  summarize,
  usedMemory,
  type Progress,
  type Summary,
} from './lib.js'
import { millionHarness } from './millionHarness.js'

const DAY = 86_400_000
/** Calls parked before the small-N sweep pass (the first ones of the 1-a-session half). */
const SMALL = 1_000

export interface MillionOptions {
  /** Calls parked in all (default 1,000,000). */
  calls: number
  /** Sleeps of 1–3 s whose wake-up lateness is measured while the calls wait. */
  sleeps: number
  /** Worker processes (they run the calls to their park). */
  workers?: number
  /** How long parking may take (ms; half for each half); the figures are then of the calls parked by then. */
  parkBudgetMs?: number
  /** runTool calls in flight from the bench process while parking. */
  inFlight?: number
  progress: Progress
}

interface SweepFigure {
  parked: number
  ms: number
  /** Redis commands the pass ran (INFO commandstats delta, commands inside scripts counted, the INFO calls not). */
  commands: number
  repairs: number
}

export interface MillionResult {
  calls: number
  redis: string
  workers: number
  /** Calls parked, 1 a session and 100 a session (fewer than `calls` when the park budget ran out). */
  parked: { ones: number; hundreds: number }
  park: { ms: number; perSecond: number }
  memory: {
    before: number
    afterOnePerSession: number
    after: number
    /** used_memory a call of the 1-a-session half, and of the 100-a-session half. */
    bytesOnePerSession: number
    bytesHundredPerSession: number
    bytesPerCall: number
    peak: number
  }
  sweep: { small: SweepFigure; large: SweepFigure }
  lateness: Summary & { sleeps: number }
  stats: { ms: Summary; parkedCalls: number; openCalls: number; openQuestions: number }
  dashboard: { sessions: Summary; questions: Summary; queues: Summary }
  loadBefore: number[]
  loadAfter: number[]
}

/**
 * The i-th parked call: its tool and input, and its session; an even split of sleep / ask / event wait.
 * The call's id is runTool's own (`run-` and a UUID: the fresh path, one write before the job).
 */
function callOf(i: number, calls: number, until: number) {
  const half = Math.floor(calls / 2)
  const sessionId = i < half ? `m1-${i}` : `m100-${Math.floor((i - half) / 100)}`
  switch (i % 3) {
    case 0:
      return { sessionId, call: { name: 'nap', input: { ms: 3 * DAY } } }
    case 1:
      return { sessionId, call: { name: 'approve', input: { until } } }
    default:
      return { sessionId, call: { name: 'settle', input: { orderId: `o-${i}` } } }
  }
}

/** Times `fn` `n` times. */
async function timed(n: number, fn: () => Promise<unknown>): Promise<Summary> {
  const samples: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await fn()
    samples.push(performance.now() - t0)
  }
  return summarize(samples)
}

const totalCalls = (stats: Record<string, { calls: number }>) => Object.values(stats).reduce((a, s) => a + s.calls, 0)

export async function measureMillion(options: MillionOptions): Promise<MillionResult> {
  const { calls, sleeps, progress } = options
  const workerCount = options.workers ?? 2
  const inFlight = options.inFlight ?? 400
  const loadBefore = os.loadavg()
  const server = await startRedisServer({ appendonly: false, hz: 100 })
  const url = server.url
  const prefix = benchPrefix('million')
  const admin = new Redis(url)
  let host: HarnessHost | undefined
  let workers: WorkerProcess[] = []
  const startWorkers = async () => {
    workers = await Promise.all(
      Array.from({ length: workerCount }, () =>
        spawnWorker({ redisUrl: url, prefix, module: 'scripts/bench/millionHarness.ts', concurrency: 200, env: { LOG_LEVEL: 'info' } }),
      ),
    )
  }
  // SIGTERM: the workers close (their active calls finish or park), then exit
  const stopWorkers = async () => {
    await Promise.all(workers.map((w) => w.kill('SIGTERM')))
    workers = []
  }
  try {
    const redis = await redisVersion(url)
    progress(`[million] private redis-server ${redis} at ${url}; ${calls.toLocaleString('en-US')} calls, ${workerCount} worker processes`)
    host = createHarnessHost({ redis: url, harnesses: [millionHarness], prefix, logger: silentLogger })
    await host.ready()
    const keys = indexKeys(prefix, 0, 1)
    const delayedKey = `${bullPrefix(prefix, 0, 1)}:${toolQueueName(millionHarness.name)}:delayed`
    const parkedNow = async () => (await admin.zcard(delayedKey)) + (await admin.zcard(keys.eventTimers))
    await startWorkers()
    // warm-up: the queue's metadata, loaded scripts and one landed call are in the baseline
    await host.open(millionHarness, { sessionId: 'warm' }).runTool({ name: 'nap', input: { ms: 0 } }, { timeoutMs: 60_000 })
    await pause(500)
    const until = Date.now() + 7 * DAY
    const s = (i: number) => callOf(i, calls, until)
    let enqueued = 0
    const enqueue = async (i: number) => {
      const { sessionId, call } = s(i)
      // enqueue only: a zero wait returns at once (WaitTimeoutError) and the call goes on durably
      await host!
        .open(millionHarness, { sessionId })
        .runTool(call, { timeoutMs: 0 })
        .catch((e: unknown) => {
          if (!(e instanceof WaitTimeoutError)) throw e
        })
      enqueued++
    }
    /** Enqueues calls start..end-1, `inFlight` at a time, until `deadline` (ms); returns how many. */
    const enqueueFor = async (start: number, end: number, deadline: number) => {
      let next = start
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < end && Date.now() < deadline) await enqueue(next++)
        }),
      )
      return next - start
    }
    const untilParked = async (n: number) => {
      for (let last = -1; ;) {
        const parked = await parkedNow()
        if (parked >= n) return
        if (parked === last && enqueued >= n) progress(`  parked ${parked}/${n}: waiting on the workers`)
        last = parked
        await pause(250)
      }
    }
    const t0 = performance.now()
    let peak = 0
    const ticker = setInterval(() => {
      void (async () => {
        const parked = await parkedNow()
        const used = await usedMemory(admin)
        peak = Math.max(peak, used)
        const secs = (performance.now() - t0) / 1000
        progress(
          `  ${secs.toFixed(0)} s: enqueued ${enqueued.toLocaleString('en-US')}, parked ${parked.toLocaleString('en-US')} ` +
            `(${Math.round(parked / secs).toLocaleString('en-US')}/s), used_memory ${(used / 2 ** 20).toFixed(0)} MiB`,
        )
      })().catch(() => {})
    }, 5_000)
    let small: SweepFigure
    let before: number
    let afterOnePerSession: number
    let after: number
    const half = Math.floor(calls / 2)
    let ones = 0
    let hundreds = 0
    try {
      before = await usedMemory(admin)
      // the small N first: its sweeper pass with the workers stopped (nothing else sends commands)
      const smallN = Math.min(SMALL, half)
      await pool(smallN, inFlight, enqueue)
      await untilParked(smallN)
      await stopWorkers()
      small = await sweepPass(host, admin, url, prefix, smallN)
      progress(`[million] sweep pass at ${smallN} parked: ${small.ms.toFixed(1)} ms, ${small.commands} commands`)
      await startWorkers()
      // each half gets half the budget: a run cut short parks as many of each kind as it could
      const budget = options.parkBudgetMs ?? Infinity
      ones = smallN + (await enqueueFor(smallN, half, Date.now() + budget / 2))
      await untilParked(ones)
      await pause(500)
      afterOnePerSession = await usedMemory(admin)
      hundreds = await enqueueFor(half, calls, Date.now() + budget / 2)
      await untilParked(ones + hundreds)
      await pause(500)
      after = await usedMemory(admin)
    } finally {
      clearInterval(ticker)
    }
    const parkMs = performance.now() - t0
    const parked = ones + hundreds
    peak = Math.max(peak, after)
    progress(`[million] ${parked.toLocaleString('en-US')} parked in ${(parkMs / 1000).toFixed(0)} s; used_memory ${after} B`)
    const memory = {
      before,
      afterOnePerSession,
      after,
      bytesOnePerSession: Math.round((afterOnePerSession - before) / ones),
      bytesHundredPerSession: Math.round((after - afterOnePerSession) / hundreds),
      bytesPerCall: Math.round((after - before) / parked),
      peak: Math.max(peak, Number(/used_memory_peak:(\d+)/.exec(await admin.info('memory'))![1])),
    }

    // ---- with the workers stopped: a sweeper pass, stats, the dashboard's first pages ----
    await stopWorkers()
    const large = await sweepPass(host, admin, url, prefix, parked)
    progress(`[million] sweep pass at ${parked} parked: ${large.ms.toFixed(1)} ms, ${large.commands} commands`)
    let last: Awaited<ReturnType<HarnessHost['stats']>> | undefined
    const statsMs = await timed(5, async () => (last = await host!.stats()))
    progress(`[million] host.stats() p50 ${statsMs.p50.toFixed(1)} ms; parkedCalls ${last!.parkedCalls}`)
    const dashboard = await serveDashboard({ host, authorize: () => ({ role: 'ops' }), port: 0 })
    let pages: MillionResult['dashboard']
    try {
      const get = (path: string) => async () => {
        const response = await fetch(new URL(path, dashboard.url))
        if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
        await response.text()
      }
      const queue = encodeURIComponent(toolQueueName(millionHarness.name))
      pages = {
        sessions: await timed(5, get('./')),
        questions: await timed(5, get('./questions')),
        queues: await timed(5, get(`./queues/api/queues?activeQueue=${queue}&status=delayed&page=1&jobsPerPage=10`)),
      }
    } finally {
      await dashboard.close()
    }
    progress(
      `[million] dashboard p50: sessions ${pages.sessions.p50.toFixed(1)} ms, questions ${pages.questions.p50.toFixed(1)} ms, ` +
        `queues ${pages.queues.p50.toFixed(1)} ms`,
    )

    // ---- lateness: short sleeps whose time comes while the N wait ----
    await startWorkers()
    // started at 50 a second, so their wake-ups come at a rate the workers serve on a loaded machine:
    // the figure is how late a due call wakes among the N waiting, not a backlog of starts
    progress(`[million] lateness: ${sleeps} sleeps of 1–3 s, started 50 a second`)
    const late: number[] = []
    const started = performance.now()
    await pool(sleeps, sleeps, async (i) => {
      await pause(started + i * 20 - performance.now())
      const session = host!.open(millionHarness, { sessionId: `late-${i}` })
      const ms = 1000 + Math.floor(Math.random() * 2000)
      const { continuedAt } = (await session.runTool({ name: 'nap', input: { ms } }, { timeoutMs: 120_000 })) as { continuedAt: number }
      const [sleep] = await session.log.read({ types: ['harness.tool.sleep'] })
      late.push(continuedAt - (sleep!.record as RecordOf<'harness.tool.sleep'>).wakeAt)
    })
    const lateness = { sleeps, ...summarize(late) }
    progress(`[million] lateness p50 ${lateness.p50} ms, p99 ${lateness.p99} ms`)
    return {
      calls,
      parked: { ones, hundreds },
      redis,
      workers: workerCount,
      park: { ms: parkMs, perSecond: parked / (parkMs / 1000) },
      memory,
      sweep: { small, large },
      lateness,
      stats: { ms: statsMs, parkedCalls: last!.parkedCalls, openCalls: last!.openCalls, openQuestions: last!.openQuestions },
      dashboard: pages,
      loadBefore,
      loadAfter: os.loadavg(),
    }
  } finally {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await host?.close().catch(() => {})
    admin.disconnect()
    await server.stop()
  }
}

/**
 * One sweeper pass (host.sweep, default limit, no grace: every parked call is old enough to be looked
 * at) of a new host, whose first pass starts at the oldest open call as a sweeper process's does; the
 * bench's host ran one pass before, so the scripts are loaded.
 */
async function sweepPass(host: HarnessHost, admin: Redis, url: string, prefix: string, parked: number): Promise<SweepFigure> {
  await host.sweep({ graceMs: 0 })
  const fresh = createHarnessHost({ redis: url, harnesses: [millionHarness], prefix, logger: silentLogger })
  try {
    await fresh.ready()
    const before = totalCalls(await commandStats(admin))
    const t0 = performance.now()
    const repairs = await fresh.sweep({ graceMs: 0 })
    const ms = performance.now() - t0
    // minus the INFO commandstats call that took `before`
    const commands = totalCalls(await commandStats(admin)) - before - 1
    return { parked, ms, commands, repairs: repairs.length }
  } finally {
    await fresh.close()
  }
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(`--${name}`)
    return i >= 0 ? Number(process.argv[i + 1]) : fallback
  }
  const quick = process.argv.includes('--quick')
  const result = await measureMillion({
    calls: arg('calls', quick ? 20_000 : 1_000_000),
    sleeps: arg('sleeps', quick ? 200 : 1_000),
    workers: arg('workers', 2),
    ...(process.argv.includes('--park-budget') ? { parkBudgetMs: arg('park-budget', 0) * 1000 } : {}),
    progress: (line) => process.stderr.write(`${line}\n`),
  })
  console.log(JSON.stringify(result, null, 2))
  process.exit(0)
}

type AtMost = (id: string, figure: string, ours: string, baseline: string, ratio: number, limit: number, target?: string) => void
type Info = (id: string, figure: string, ours: string, baseline: string, ratio: number | null) => void

/** Rows 10a–10f of the bench table (docs/BENCHMARKS.md). */
export function millionRows(m: MillionResult, atMost: AtMost, info: Info): void {
  const n = (x: number) => x.toLocaleString('en-US')
  const ms = (x: number) => (x >= 100 ? `${x.toFixed(0)} ms` : `${x.toFixed(1)} ms`)
  const parked = m.parked.ones + m.parked.hundreds
  const at = `${n(parked)} parked`
  const { memory: mem } = m
  atMost(
    '10a',
    `Redis used_memory a parked call, 1 a session (${at})`,
    `${mem.bytesOnePerSession} B`,
    'target 2048 B',
    mem.bytesOnePerSession / 2048,
    1,
  )
  atMost(
    '10a',
    `Redis used_memory a parked call, 100 a session (${at})`,
    `${mem.bytesHundredPerSession} B`,
    'target 2048 B',
    mem.bytesHundredPerSession / 2048,
    1,
  )
  // 2 GiB at a million calls: 2,147 B a call
  const gib = (x: number) => `${(x / 2 ** 30).toFixed(2)} GiB`
  const perMillion = (mem.bytesPerCall * 1_000_000) / 2 ** 31
  atMost(
    '10b',
    `Redis used_memory in all: ${at} (projected to 1,000,000), parked at ${n(Math.round(m.park.perSecond))}/s`,
    `${gib(mem.after)} (${gib(mem.bytesPerCall * 1_000_000)})`,
    'target 2 GiB at 1,000,000',
    perMillion,
    1,
  )
  const { small, large } = m.sweep
  atMost(
    '10c',
    `sweeper pass (limit 1,000) at ${at}: Redis commands (time)`,
    `${n(large.commands)} (${ms(large.ms)})`,
    `at ${n(small.parked)} parked ${n(small.commands)} (${ms(small.ms)})`,
    large.commands / small.commands,
    1.1,
  )
  const l = m.lateness
  atMost(
    '10d',
    `wake-up lateness p99 (p50), ${n(l.sleeps)} sleeps of 1-3 s while ${at} wait`,
    `${ms(l.p99)} (${ms(l.p50)})`,
    'target 100 ms',
    l.p99 / 100,
    1,
  )
  info(
    '10e',
    `host.stats() p50 at ${at} (its parkedCalls)`,
    `${ms(m.stats.ms.p50)} (${n(m.stats.parkedCalls)})`,
    `openCalls ${n(m.stats.openCalls)}, openQuestions ${n(m.stats.openQuestions)}`,
    null,
  )
  const d = m.dashboard
  info(
    '10f',
    `dashboard first page p50 at ${at}: sessions (questions, queues' delayed jobs)`,
    ms(d.sessions.p50),
    `questions ${ms(d.questions.p50)}, queues ${ms(d.queues.p50)}`,
    null,
  )
}
