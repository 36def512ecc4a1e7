import type { Logger } from 'pino'
import { serializeError } from '../credentials.js'
import { ConfigError, ShardCountError, UnknownHarnessError } from '../errors/index.js'
import { createLogger } from '../logger.js'
import {
  assertSessionId,
  assertShards,
  DEFAULT_EVENT_RETENTION_MS,
  EventWaits,
  claimShardCount,
  claimRecordFormat,
  type RecordFormat,
  claimCallMarks,
  type CallMarks,
  defaultShards,
  indexKeys,
  OpenWork,
  SessionLog,
  type Question,
  type RedisClient,
} from '../log/index.js'
import { connectionErrorLogger, probeRedis, resolveRedis } from './connection.js'
import { clearTrimmedJobs, createQueues, type HarnessQueues, type TrimmedJobs } from '../queue/index.js'
import { createLocalLane, localLaneEnabled } from '../lane/index.js'
import { startHostWorkers, type WorkersHandle } from './hostWorkers.js'
import type { HostOptions } from './hostOptions.js'
import { forkSession, type ForkOptions } from './forkSession.js'
import { isVerifiedBullmq } from '../lane/index.js'
import { ProcessLiveness, workerLivenessEnabled } from '../liveness/index.js'
import { settleWithin, type CloseOptions, type CloseResult } from './workers.js'
import { sweep, type Repair, type SweepOptions } from '../recovery/sweeper.js'
import { retainOnce, retentionOf } from '../retention/index.js'
import type { Harness } from './defineHarness.js'
import { agentHost, withAgentHarnesses } from './agentTool.js'
import { Notifier } from './notifier.js'
import { Session } from './session.js'
import { sendEvent, type HostEvents } from './machineEvents.js'
import { createSchedules, type HostSchedules } from './schedules.js'
import { parseDuration } from '../tool/index.js'
import { hostOperations, type HostOperations } from './hostOps.js'
import {
  harnessOf,
  hostQueues,
  hostStats,
  listSessions,
  openQuestions,
  type HostStats,
  type QueueRef,
  type SessionSummary,
  type SessionsFilter,
} from '../ops/index.js'

export type { CloseOptions, CloseResult, HostOptions, WorkersHandle }

/** What `createHarnessHost` returns: sessions (`open`), workers, the sweeper, and what operators see (`sessions`, `stats`, `queues`). */
export interface HarnessHost extends HostEvents, HostSchedules, HostOperations {
  readonly prefix: string
  readonly logger: Logger
  /** Resolves when Redis answers; rejects with RedisUnavailableError after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>
  /**
   * A handle on one session of `harness`, without a Redis round trip: the session exists from its
   * first prompt. `sessionId` is the caller's, 1–200 characters of [A-Za-z0-9._-]; another throws
   * InvalidIdError.
   */
  open(harness: Harness, options: { sessionId: string }): Session
  /**
   * Turn and tool workers for every harness of this host, in this process. They also run a sweep
   * every `sweepEveryMs` (default 30 s; 0 turns it off). `shards`: serve only these shards (default
   * all); concurrency is per queue of each shard served. They start once the shard count is checked.
   */
  startWorkers(options?: { concurrency?: number; sweepEveryMs?: number; shards?: readonly number[] }): WorkersHandle
  /** One recovery pass over open work; returns the repairs it made (each also logged). */
  sweep(options?: SweepOptions): Promise<Repair[]>
  /**
   * One retention pass (docs/retention.md): exports and removes up to `limit` sessions idle past
   * `retention.sessionMs` with nothing open; returns their ids. Workers run it with each sweep. Without a
   * `retention` option it removes nothing.
   */
  retain(options?: { limit?: number }): Promise<string[]>
  /** Open step.ask questions across the host's sessions (oldest first). */
  questions(options?: { limit?: number; sealed?: 'throw' | 'mask' }): Promise<Array<Question & { sessionId: string }>>
  /** Recent sessions, newest first (the sessions index), with filters: for operators (CLI, dashboard). */
  sessions(filter?: SessionsFilter): Promise<SessionSummary[]>
  /** A session of this host opened with the harness of its inputs; null when it has none this host runs. */
  find(sessionId: string): Promise<Session | null>
  /**
   * A new session whose conversation is `sessionId`'s up to `before` (not included) or `through`
   * (included), copied as settled (nothing of it runs again); resolves with the new session's id
   * (docs/compaction.md, "Fork"). The source is only read. ForkError (`fork_refused`) for a copied
   * turn that is not settled or a new session that exists.
   */
  fork(sessionId: string, options?: ForkOptions): Promise<string>
  /** Every queue of the host's harnesses (per shard), for stats, metrics and queue views. */
  queues(): QueueRef[]
  /** Queue counts per shard, parked calls, open turns, calls and questions, recoveries. */
  stats(): Promise<HostStats>
  /** Closes running workers (see WorkersHandle.close), then the connections; bounded by `timeoutMs` if given. */
  close(options?: CloseOptions): Promise<CloseResult>
}

const PREFIX = /^[A-Za-z0-9._-]{1,50}$/

/**
 * Connects harnesses to Redis: sessions, queues, workers. Cheap to create in every process: a web
 * server's host opens sessions and prompts, a worker process's host runs the workers.
 *
 * @example
 * ```ts
 * import { createHarnessHost } from 'durable-harness'
 *
 * const host = createHarnessHost({ redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', harnesses: [assistant] })
 * host.startWorkers({ concurrency: 10 }) // or run `npx harness worker ./harness.js` processes
 * const session = host.open(assistant, { sessionId: 'order-42' })
 * const { inputId } = await session.prompt('Charge order 42')
 * const settled = await session.settled(inputId) // { outcome: 'completed', text: '...' }
 * ```
 */
export function createHarnessHost(options: HostOptions): HarnessHost {
  const prefix = options.prefix ?? 'dh'
  if (!PREFIX.test(prefix)) throw new ConfigError(`createHarnessHost: prefix ${JSON.stringify(prefix)} must match ${PREFIX}.`)
  // errors logged through the host are redacted, whoever made the logger
  const logger = (options.logger ?? createLogger()).child({}, { serializers: { err: serializeError } })
  const shards = options.shards ?? defaultShards()
  assertShards(shards)
  const lane = createLocalLane(localLaneEnabled(options.localLane))
  // its command connection named, so other worker processes can tell when it is gone (src/liveness/)
  const liveness = workerLivenessEnabled(options.workerLiveness) && isVerifiedBullmq() ? new ProcessLiveness() : undefined
  // lazy: nothing connects (or logs) until first use, so ready() can report an unreachable Redis in one line;
  // commands wait across a Redis restart or failover instead of failing (workers reconnect, no job lost)
  const target = resolveRedis(options.redis)
  const named = liveness ? { connectionName: liveness.connectionName } : {}
  const redis: RedisClient = target.open({ maxRetriesPerRequest: null, lazyConnect: true, ...named }, { lazyConnect: true })
  // the log's commands on a connection of their own (BullMQ's queues and workers keep `redis`); not
  // auto-pipelined: it measured +45% calls/s off on a quiet machine, no gain on a loaded one (issue 24;
  // docs/decisions/log-connection.md). runScript sends plain EVALSHA/EVAL, so turning it on again cannot break a pipeline
  const logRedis: RedisClient = target.open({ maxRetriesPerRequest: null, lazyConnect: true }, { lazyConnect: true })
  const where = target.where
  const onError = connectionErrorLogger(logger, where)
  redis.on('error', onError)
  logRedis.on('error', onError)
  const channels = Array.from({ length: shards }, (_, shard) => indexKeys(prefix, shard, shards).events)
  const notifier = new Notifier(redis, channels)
  const all = withAgentHarnesses(options.harnesses)
  const harnesses = new Map(all.map((h) => [h.name, h]))
  const queues = new Map<string, HarnessQueues>()
  const running: WorkersHandle[] = []

  const queuesOf = (harness: Harness): HarnessQueues => {
    if (harnesses.get(harness.name) !== harness) throw new UnknownHarnessError(harness.name)
    let q = queues.get(harness.name)
    if (!q) queues.set(harness.name, (q = createQueues(harness, redis, prefix, shards, options.codec)))
    return q
  }
  const queuesByName = (name: string) => {
    const harness = harnesses.get(name)
    return harness && queuesOf(harness)
  }
  // the deployment's record format (storedRecords.ts): 1 until checkShards has read it
  const recordFormat: { current: RecordFormat } = { current: 1 }
  const logOptions = {
    shards,
    recordFormat,
    ...lane.landingOptions(notifier), // on: a caller here hears its landing from the reply (src/lane/)
    ...(options.writeRetryMs === undefined ? {} : { writeRetryMs: options.writeRetryMs }),
    ...(options.codec ? { codec: options.codec } : {}),
    ...(options.waitReplicas
      ? { waitReplicas: { replicas: options.waitReplicas.replicas ?? 1, timeoutMs: options.waitReplicas.timeoutMs ?? 200 } }
      : {}),
  }
  const logFor = (sessionId: string) => new SessionLog(logRedis, prefix, sessionId, logOptions)
  // child agents (agentTool, ctx.agents): the host's harnesses by name, and a child's turn aborted as session.abort does
  const agents = agentHost(harnesses, (harness, sessionId) => openSession(harness, sessionId), logFor)
  const openSession = (harness: Harness, sessionId: string): Session => {
    assertSessionId(sessionId)
    return new Session({
      harness,
      log: logFor(sessionId),
      queues: queuesOf(harness),
      notifier,
      lane,
      open: openSession,
      agents,
      deployment: () => (marks === undefined ? checkShards() : undefined),
      callMarks,
    })
  }
  const openWork = new OpenWork(redis, prefix, shards)
  // the deployment's shard count: the first host writes it, every later one must agree (checked once;
  // ready(), the workers, the sweeper and every session write wait for it)
  // with it, the deployment's call mark key (callMarks.ts), read once in the same round trip
  let shardCheck: Promise<void> | undefined
  let marks: CallMarks | undefined
  const callMarks = () => marks
  const checkShards = (): Promise<void> =>
    (shardCheck ??= (async () => {
      // before the shard count: a deployment that has none yet is new, and starts at record format 2
      const format = await claimRecordFormat(redis, prefix)
      const [stored, claimed] = await Promise.all([claimShardCount(redis, prefix, shards), claimCallMarks(redis, prefix)])
      if (stored !== null && stored !== shards) throw new ShardCountError(prefix, stored, shards)
      marks = claimed
      recordFormat.current = format
    })().catch((error: unknown) => {
      if (!(error instanceof ShardCountError)) shardCheck = undefined // Redis trouble: check again next time
      throw error
    }))
  // session.abort of a settled turn ends its parked calls (with the reason it settled with)
  const endParkedCalls = (harness: Harness, sessionId: string, inputId: string) => openSession(harness, sessionId).abort(inputId)
  const sweepOnce = async (sweepOptions?: SweepOptions) => {
    await checkShards()
    return sweep({ openWork, harnesses, queuesOf, logFor, endParkedCalls, logger }, sweepOptions)
  }
  const retention = options.retention ? retentionOf(options.retention) : undefined
  const trimming = all.filter((h) => h.compaction?.trimAfterMs !== undefined).map((h) => h.name)
  if (!retention && trimming.length > 0)
    logger.warn({ harnesses: trimming }, 'compaction.trimAfter needs the host option retention (its export): nothing is trimmed')
  const eventRetentionMs = options.events?.retention === undefined ? DEFAULT_EVENT_RETENTION_MS : parseDuration(options.events.retention)
  const waits = new EventWaits(logRedis, prefix, eventRetentionMs, options.codec)
  const abortTurn = async (name: string, sessionId: string, inputId: string, reason: string) => {
    const harness = harnesses.get(name)
    if (harness) await openSession(harness, sessionId).abort(inputId, reason)
  }
  const schedules = createSchedules({ redis, prefix, shards, harnesses, open: openSession, logFor, logger })
  const clearJobs = (sessionId: string, jobs: TrimmedJobs) => clearTrimmedJobs(queuesByName, sessionId, jobs)
  const retain = async (retainOptions?: { limit?: number; shards?: readonly number[] }) =>
    retention ? retainOnce({ redis, prefix, shards, logFor, retention, logger, clearJobs }, retainOptions) : []

  return {
    ...hostOperations({ redis, prefix, shards, harnesses, queuesOf, open: openSession, logFor }),
    prefix,
    logger,
    async ready(timeoutMs = 3_000) {
      await probeRedis(target, timeoutMs)
      await checkShards()
    },
    open: (harness, { sessionId }) => openSession(harness, sessionId),
    startWorkers(workerOptions) {
      return startHostWorkers(
        {
          redis,
          prefix,
          shards,
          all,
          notifier,
          logger,
          logFor,
          queuesOf,
          queuesByName,
          agents,
          keepJobs: retention?.keepJobs,
          checkShards,
          callMarks,
          sweepOnce,
          retain,
          running,
          scheduleWorker: schedules.worker,
          lane,
          liveness,
        },
        workerOptions,
      )
    },
    sweep: sweepOnce,
    retain,
    questions: ({ limit = 100, sealed } = {}) => openQuestions(openWork, logFor, limit, sealed),
    sessions: (filter) => listSessions(redis, prefix, shards, filter),
    async fork(sessionId, options = {}) {
      assertSessionId(sessionId)
      await checkShards()
      return forkSession(logFor(sessionId), logFor, options)
    },
    async find(sessionId) {
      assertSessionId(sessionId)
      // a session with no input (runTool only) belongs to the host's one harness, if it has one
      const name = await harnessOf(redis, prefix, shards, sessionId)
      const harness = name ? harnesses.get(name) : all.length === 1 ? all[0] : undefined
      return harness ? openSession(harness, sessionId) : null
    },
    queues: () => hostQueues(harnesses.values(), queuesOf),
    stats: () => hostStats(redis, prefix, shards, hostQueues(harnesses.values(), queuesOf), all),
    async sendEvent(event) {
      await checkShards()
      return sendEvent({ waits, queuesByName, logFor, queues: { connection: redis, prefix, shards }, abortTurn, logger }, event)
    },
    schedule: async (o) => (await checkShards(), schedules.schedule(o)),
    unschedule: (id) => schedules.unschedule(id),
    schedules: () => schedules.schedules(),
    async close({ timeoutMs } = {}) {
      const deadline = Date.now() + (timeoutMs ?? Infinity)
      const left = () => (timeoutMs === undefined ? undefined : Math.max(0, deadline - Date.now()))
      const closed = await Promise.all([...running].map((w) => w.close({ timeoutMs: left() })))
      // the queues share `redis`, whose commands wait for a reconnect, so this wait is bounded too
      await settleWithin(Promise.all([...[...queues.values()].map((q) => q.close()), schedules.close()]), left())
      await notifier.close()
      redis.disconnect()
      logRedis.disconnect()
      return { forced: closed.flatMap((c) => c.forced) }
    },
  }
}
