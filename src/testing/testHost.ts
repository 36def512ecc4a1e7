// createTestHost: a real host and workers on a private redis-server, with a clock a test moves
// (docs/testing.md). Every wait runs through the product's own code; the kit only moves time and
// wakes the workers when something comes due.
import { randomBytes } from 'node:crypto'
import type { Harness } from '../harness/defineHarness.js'
import { createHarnessHost, type HarnessHost, type HostOptions, type WorkersHandle } from '../harness/host.js'
import type { Session } from '../harness/session.js'
import type { SendEventOptions, SendEventResult } from '../harness/machineEvents.js'
import { ConfigError } from '../errors/index.js'
import { createLogger } from '../logger.js'
import { createRedisClient } from '../harness/connection.js'
import { CRASH_WORKERS } from '../harness/crashWorkers.js'
import type { RedisClient } from '../log/index.js'
import { observeStepRuns, parseDuration, type Duration } from '../tool/index.js'
import { deletePrefixKeys } from './deleteKeys.js'
import { DueWork } from './dueWork.js'
import { Submissions } from './submissions.js'
import { ManualClock } from './manualClock.js'
import { hasRedisServerBinary, startRedisServer, type RedisServerHandle } from './redisServer.js'
import { callsOf, stepRunCounter, stepsOf, timelineOf, type TestCall, type TestStep } from './testRecords.js'

export type { TestCall, TestStep }

/** One in-process worker of a test host (`env.workers`). */
export interface TestWorker {
  readonly index: number
}

/** Options of `createTestHost`. */
export interface TestHostOptions {
  harnesses: readonly Harness[]
  /** 'manual' (default): time moves only by `advance`; 'real': the wall clock, as in production. */
  clock?: 'manual' | 'real'
  /** A Redis to use (its own key prefix, removed at close); default REDIS_URL, else a private redis-server the kit starts and stops. */
  redis?: string
  /** Jobs at once per queue of each in-process worker (default 4). */
  concurrency?: number
  /** How many workers (worker sets, as `host.startWorkers()` starts them) run in this process (default 1): `env.workers`. */
  workers?: number
  /** The host's retention (docs/retention.md): its passes run at every stop of `advance`, on the test's clock. */
  retention?: HostOptions['retention']
}

/** What `createTestHost` returns: the host, its clock, and what happened in its sessions. */
export interface TestHost {
  readonly host: HarnessHost
  /** The Redis URL the host uses. */
  readonly redisUrl: string
  /** A session of one of the harnesses; the host waits for its runTool calls and prompts to be logged before it calls itself idle. */
  open(harness: Harness, sessionId: string): Session
  /** The host's time (ms): the wall clock, moved forward by every `advance` of a manual clock. */
  now(): number
  /** Moves a manual clock forward by `duration` (ms or '30d'): every wait due in the span happens, in time order. */
  advance(duration: Duration): Promise<void>
  /** Moves a manual clock to `at` (a time already past moves nothing, and runs what is due). */
  advanceTo(at: Date | number): Promise<void>
  /** Waits until no job waits, runs or is due now (a parked call is not running). */
  runUntilIdle(options?: { timeoutMs?: number }): Promise<void>
  /** The tool calls of a session, in log order: tool, status, attempts, result or error. */
  calls(sessionId: string): Promise<TestCall[]>
  /** The steps of a call, in log order: name, value, and how many times its fn ran in this process. */
  steps(sessionId: string, toolCallId: string): Promise<TestStep[]>
  /** The session's timeline as `harness log` prints it, one line an event, without the times. */
  timeline(sessionId: string): Promise<string[]>
  /** Answers a question (an object from `session.questions()`, or its ids) as `session.answer` does. */
  answer(question: { sessionId?: string; questionId: string }, value: unknown, options?: { sessionId?: string }): Promise<void>
  /** Sends a machine event as `host.sendEvent` does. */
  sendEvent(options: SendEventOptions): Promise<SendEventResult>
  /** The in-process workers, for `crash`. */
  readonly workers: readonly TestWorker[]
  /**
   * SIGKILL-equivalent of a worker (default: every one): the attempts it runs now stop before their
   * next side effect and write nothing more, their jobs go back to wait at once, and a new worker
   * takes its place.
   */
  crash(worker?: TestWorker): Promise<void>
  /** Stops the workers, closes the host, removes the keys, stops a Redis the kit started, gives Date.now() back. */
  close(): Promise<void>
}

async function redisFor(given: string | undefined): Promise<{ url: string; server?: RedisServerHandle }> {
  const url = given ?? process.env.REDIS_URL
  if (url) return { url }
  if (!hasRedisServerBinary())
    throw new ConfigError(
      'createTestHost: no REDIS_URL and no redis-server binary on PATH; install Redis (apt-get install redis-server) or set REDIS_URL.',
    )
  const server = await startRedisServer({})
  return { url: server.url, server }
}

/**
 * A real host with its workers in this process, on a Redis of its own, for tests of durable tools.
 *
 * @example
 * ```ts
 * import { createTestHost } from 'durable-harness/testing'
 *
 * const env = await createTestHost({ harnesses: [billing] })
 * const session = env.open(billing, 'order-1')
 * const waiting = session.runTool({ name: 'renew', input: { orderId: 'o1' } })
 * await env.advance('30d') // the tool's 30-day step.sleep ends now
 * expect(await waiting).toEqual({ renewed: true })
 * await env.close()
 * ```
 */
export async function createTestHost(options: TestHostOptions): Promise<TestHost> {
  if (!options || !Array.isArray(options.harnesses) || options.harnesses.length === 0)
    throw new ConfigError('createTestHost: `harnesses` must be a non-empty array of defineHarness(...) results.')
  const clockKind = options.clock ?? 'manual'
  if (clockKind !== 'manual' && clockKind !== 'real')
    throw new ConfigError(`createTestHost: clock must be 'manual' or 'real', not ${JSON.stringify(clockKind)}.`)
  const { url, server } = await redisFor(options.redis)
  const clock = clockKind === 'manual' ? ManualClock.install() : undefined
  const prefix = `dh-test-${randomBytes(4).toString('hex')}`
  const logger = createLogger().child({ testHost: prefix })
  // a crash's lost attempts warn by design: a test shows errors only, unless LOG_LEVEL says more
  logger.level = process.env.LOG_LEVEL ?? 'error'
  const retention = options.retention
  const host = createHarnessHost({ redis: url, harnesses: [...options.harnesses], prefix, logger, ...(retention ? { retention } : {}) })
  const start = () => host.startWorkers({ concurrency: options.concurrency ?? 4, sweepEveryMs: 0 })
  const count = options.workers ?? 1
  if (!Number.isInteger(count) || count < 1)
    throw new ConfigError(`createTestHost: workers must be a whole number of 1 or more, not ${String(count)}.`)
  const running: WorkersHandle[] = Array.from({ length: count }, start)
  const testWorkers: TestWorker[] = running.map((_, index) => Object.freeze({ index }))
  const redis: RedisClient = createRedisClient(url)
  const due = new DueWork(redis, host, retention?.sessionMs)
  const now = () => clock?.now() ?? Date.now()
  const counter = stepRunCounter()
  const unobserve = observeStepRuns(counter.count)
  const sessionOf = async (sessionId: string): Promise<Session> =>
    (await host.find(sessionId)) ?? host.open(options.harnesses[0]!, { sessionId })

  const submissions = new Submissions()
  const runUntilIdle = async ({ timeoutMs = 30_000 } = {}) => {
    await submissions.settled()
    const until = Date.now() + timeoutMs
    for (let calm = 0; calm < 2;) {
      await due.wake(now())
      calm = (await due.idle(now())) ? calm + 1 : 0
      if (calm < 2) {
        if (Date.now() > until) throw new Error(`runUntilIdle: work still runs or is due after ${timeoutMs} ms.`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
  }

  const advanceTo = async (at: Date | number) => {
    const target = at instanceof Date ? at.getTime() : at
    if (!Number.isFinite(target)) throw new ConfigError(`advanceTo: ${String(at)} is not a time.`)
    if (!clock) throw new ConfigError("advance and advanceTo need createTestHost({ clock: 'manual' }); a real clock moves by itself.")
    await runUntilIdle()
    // each wait in time order: the clock stops at every due time, so what one wake starts is due in turn
    for (let stuck = 0; ;) {
      const next = await due.next(target)
      // a wait due already that a stop does not clear would stop here for ever
      stuck = next !== undefined && next <= clock.now() ? stuck + 1 : 0
      if (stuck > 50) throw new Error(`advance: a wait due at ${new Date(next!).toISOString()} stays due; see the host's log.`)
      clock.moveTo(next ?? target)
      await host.sweep({ limit: 10_000 })
      // its log's entry times are Redis's clock: retention reads them on this one (retainOnce's entryTime)
      const pass = { limit: 10_000, entryTime: (ms: number) => clock.atReal(ms) }
      if (retention) await host.retain(pass)
      await runUntilIdle()
      if (next === undefined) break
    }
  }

  return {
    host,
    redisUrl: url,
    open: (harness, sessionId) => submissions.track(host.open(harness, { sessionId })),
    now,
    // from when what runs now has parked: a 30-day sleep begun just before is due 30 days on
    advance: async (duration) => {
      const ms = parseDuration(duration)
      await runUntilIdle()
      await advanceTo(now() + ms)
    },
    advanceTo,
    runUntilIdle,
    calls: async (sessionId) => callsOf(await sessionOf(sessionId)),
    steps: async (sessionId, toolCallId) => stepsOf(await sessionOf(sessionId), toolCallId, counter.runs),
    timeline: async (sessionId) => timelineOf(await sessionOf(sessionId)),
    async answer(question, value, answerOptions) {
      const sessionId = answerOptions?.sessionId ?? question.sessionId
      if (!sessionId) throw new ConfigError('env.answer: pass the question with its sessionId, or { sessionId }.')
      await (await sessionOf(sessionId)).answer(question.questionId, value)
    },
    sendEvent: (event) => host.sendEvent(event),
    workers: testWorkers,
    async crash(worker) {
      if (worker !== undefined && testWorkers[worker.index] !== worker)
        throw new ConfigError('env.crash: not a worker of this test host (env.workers).')
      for (const { index } of worker ? [worker] : testWorkers) {
        await crashWorkers(running[index]!)
        running[index] = start()
      }
    },
    async close() {
      try {
        await Promise.all(running.map((w) => w.close({ timeoutMs: 5_000 })))
        await host.close({ timeoutMs: 5_000 })
        await deletePrefixKeys(redis, prefix)
      } finally {
        unobserve()
        redis.disconnect()
        clock?.uninstall()
        await server?.stop()
      }
    },
  }
}

/** The in-process workers' SIGKILL-equivalent (src/harness/workers.ts, under its symbol). */
async function crashWorkers(workers: WorkersHandle): Promise<void> {
  const crash: unknown = Reflect.get(workers, CRASH_WORKERS)
  if (typeof crash !== 'function') throw new Error('env.crash: these workers cannot crash (a durable-harness of another version?).')
  await Reflect.apply(crash, workers, [])
}
