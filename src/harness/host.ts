import { Redis, type RedisOptions } from 'ioredis'
import type { Worker } from 'bullmq'
import type { Logger } from 'pino'
import { isAuthFailure, redactCredentials, serializeError } from '../credentials.js'
import { ConfigError, RedisAuthError, RedisUnavailableError, UnknownHarnessError } from '../errors.js'
import { createLogger } from '../logger.js'
import { assertSessionId, indexKeys, OpenWork, openMember, SessionLog, type OpenItem, type Question } from '../log/index.js'
import { CallAborts } from '../call/index.js'
import { createQueues, type HarnessQueues } from '../queue/index.js'
import { closeWorkers, settleWithin, startWorkerSet, type CloseOptions, type CloseResult } from './workers.js'
import { sweep, type Repair, type SweepOptions } from '../recovery/index.js'
import { retainOnce, retentionOf, type RetentionOptions } from '../retention/index.js'
import type { Harness } from './defineHarness.js'
import { withAgentHarnesses } from './agentTool.js'
import { Notifier } from './notifier.js'
import { Session } from './session.js'

export interface HostOptions {
  /** A redis:// URL or ioredis options. */
  redis: string | RedisOptions
  harnesses: ReadonlyArray<Harness>
  /** Key prefix of every key this host writes. */
  prefix?: string
  logger?: Logger
  /**
   * How long a tool call attempt retries a write Redis refused (e.g. OOM) before its job fails and
   * the call is picked up again as a cut (default 10 s). A write of ours never lands as a tool error.
   */
  writeRetryMs?: number
  /** What is kept for how long (docs/retention.md); without it nothing of a session is removed. */
  retention?: RetentionOptions
}

export type { CloseOptions, CloseResult }

export interface WorkersHandle {
  /**
   * Stops taking jobs and waits for active ones to finish (BullMQ hands unfinished ones back), at most
   * `timeoutMs`; `forced` names the queues whose workers it stopped waiting for.
   */
  close(options?: CloseOptions): Promise<CloseResult>
  readonly workers: ReadonlyArray<Worker>
}

export interface HarnessHost {
  readonly prefix: string
  readonly logger: Logger
  /** Resolves when Redis answers; rejects with RedisUnavailableError after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>
  open(harness: Harness, options: { sessionId: string }): Session
  /**
   * Turn and tool workers for every harness of this host, in this process. They also run a sweep
   * every `sweepEveryMs` (default 30 s; 0 turns it off).
   */
  startWorkers(options?: { concurrency?: number; sweepEveryMs?: number }): WorkersHandle
  /** One recovery pass over open work; returns the repairs it made (each also logged). */
  sweep(options?: SweepOptions): Promise<Repair[]>
  /**
   * One retention pass (docs/retention.md): exports and removes up to `limit` sessions idle past
   * `retention.sessionMs` with nothing open; returns their ids. Workers run it with each sweep. Without a
   * `retention` option it removes nothing.
   */
  retain(options?: { limit?: number }): Promise<string[]>
  /** Open step.ask questions across the host's sessions (oldest first). */
  questions(options?: { limit?: number }): Promise<Array<Question & { sessionId: string }>>
  /** Closes running workers (see WorkersHandle.close), then the connections; bounded by `timeoutMs` if given. */
  close(options?: CloseOptions): Promise<CloseResult>
}

/** Runs `pass` every `everyMs` (with jitter, so many workers don't sweep in lockstep), never overlapping. */
export function startSweepTimer(pass: () => Promise<unknown>, everyMs: number, logger: Logger): { stop(): void } {
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  const next = () => {
    if (stopped) return
    timer = setTimeout(
      async () => {
        await pass().catch((err) => logger.warn({ err }, 'sweep failed; next pass retries'))
        next()
      },
      everyMs * (0.75 + Math.random() / 2),
    )
    timer.unref()
  }
  next()
  return {
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}

const PREFIX = /^[A-Za-z0-9._-]{1,50}$/

/** The settled record a settle message carries; null for a payload that is not one (never throws). */
function parseSettled(payload: string): { outcome?: string; error?: { message?: string } } | null {
  try {
    const record = JSON.parse(payload) as unknown
    return typeof record === 'object' && record !== null ? (record as { outcome?: string; error?: { message?: string } }) : null
  } catch {
    return null
  }
}

/** Connects harnesses to Redis: sessions, queues, workers. Cheap to create in every process. */
export function createHarnessHost(options: HostOptions): HarnessHost {
  const prefix = options.prefix ?? 'dh'
  if (!PREFIX.test(prefix)) throw new ConfigError(`createHarnessHost: prefix ${JSON.stringify(prefix)} must match ${PREFIX}.`)
  // errors logged through the host are redacted, whoever made the logger
  const logger = (options.logger ?? createLogger()).child({}, { serializers: { err: serializeError } })
  // lazy: nothing connects (or logs) until first use, so ready() can report an unreachable Redis in one line
  const redisOptions: RedisOptions = { maxRetriesPerRequest: null, lazyConnect: true }
  // commands wait across a Redis restart instead of failing (workers reconnect, no job lost)
  const redis =
    typeof options.redis === 'string' ? new Redis(options.redis, redisOptions) : new Redis({ ...options.redis, ...redisOptions })
  const where =
    typeof options.redis === 'string'
      ? redactCredentials(options.redis)
      : `${options.redis.host ?? '127.0.0.1'}:${options.redis.port ?? 6379}`
  let lastError = 0
  redis.on('error', (err) => {
    // one line per 10 s, not a stack per retry
    if (Date.now() - lastError > 10_000) {
      if (isAuthFailure(err))
        logger.warn({ err: err.message, redis: where }, 'Redis authentication failed; retrying (check the user and password in REDIS_URL)')
      else logger.warn({ err: err.message, redis: where }, 'Redis connection error; retrying')
    }
    lastError = Date.now()
  })
  const notifier = new Notifier(redis, indexKeys(prefix).events)
  const all = withAgentHarnesses(options.harnesses)
  const harnesses = new Map(all.map((h) => [h.name, h]))
  const queues = new Map<string, HarnessQueues>()
  const running: WorkersHandle[] = []

  const queuesOf = (harness: Harness): HarnessQueues => {
    if (harnesses.get(harness.name) !== harness) throw new UnknownHarnessError(harness.name)
    let q = queues.get(harness.name)
    if (!q) queues.set(harness.name, (q = createQueues(harness, redis, prefix)))
    return q
  }
  const queuesByName = (name: string) => {
    const harness = harnesses.get(name)
    return harness && queuesOf(harness)
  }
  const logOptions = options.writeRetryMs === undefined ? {} : { writeRetryMs: options.writeRetryMs }
  const logFor = (sessionId: string) => new SessionLog(redis, prefix, sessionId, logOptions)
  const openSession = (harness: Harness, sessionId: string): Session => {
    assertSessionId(sessionId)
    return new Session({ harness, log: logFor(sessionId), queues: queuesOf(harness), notifier, open: openSession })
  }
  const openWork = new OpenWork(redis, prefix)
  const cancelAborted = (harness: Harness, sessionId: string, inputId: string) => openSession(harness, sessionId).abort(inputId)
  const sweepOnce = (sweepOptions?: SweepOptions) => sweep({ openWork, harnesses, queuesOf, logFor, cancelAborted, logger }, sweepOptions)
  const retention = options.retention ? retentionOf(options.retention) : undefined
  const retain = async (retainOptions?: { limit?: number }) =>
    retention ? retainOnce({ redis, prefix, logFor, retention, logger }, retainOptions) : []

  return {
    prefix,
    logger,
    async ready(timeoutMs = 3_000) {
      const probe = redis.duplicate({ maxRetriesPerRequest: 0, retryStrategy: () => null })
      let refused: Error | undefined
      probe.on('error', (err) => {
        if (isAuthFailure(err)) refused = err
      })
      try {
        await Promise.race([
          probe.connect().then(() => probe.ping()),
          new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs)),
        ])
      } catch (error) {
        const authError = refused ?? (isAuthFailure(error) ? (error as Error) : undefined)
        if (authError) throw new RedisAuthError(where, authError.message)
        throw new RedisUnavailableError(where, error)
      } finally {
        probe.disconnect()
      }
    },
    open(harness, { sessionId }) {
      return openSession(harness, sessionId)
    },
    startWorkers({ concurrency = 10, sweepEveryMs = 30_000 } = {}) {
      // a turn that settled (aborted, timed out, from any process) ends its calls still running here:
      // their ctx.abortSignal fires and each lands an 'aborted' tool error
      const aborts = new CallAborts()
      const unlisten = notifier.listen((message) => {
        if (message.kind !== 'input') return
        const settled = parseSettled(message.payload)
        aborts.abortTurn(openMember(message.sessionId, message.id), settled?.error?.message ?? `Turn ${settled?.outcome ?? 'settled'}.`)
      })
      const workers = all.flatMap((harness) =>
        startWorkerSet({
          harness,
          queues: queuesOf(harness),
          connection: redis,
          prefix,
          concurrency,
          logFor,
          queuesOf,
          queuesByName,
          aborts,
          logger,
          ...(retention ? { keepJobs: retention.keepJobs } : {}),
        }),
      )
      const sweeper = sweepEveryMs > 0 ? startSweepTimer(async () => (await sweepOnce(), await retain()), sweepEveryMs, logger) : null
      const handle: WorkersHandle = {
        workers,
        async close(closeOptions) {
          sweeper?.stop()
          unlisten()
          const result = await closeWorkers(workers, closeOptions)
          if (running.includes(handle)) running.splice(running.indexOf(handle), 1)
          return result
        },
      }
      running.push(handle)
      return handle
    },
    sweep: sweepOnce,
    retain,
    async questions({ limit = 100 } = {}) {
      const out: Array<Question & { sessionId: string }> = []
      // an expired (or vanished) question is never answerable again: drop it from the index as we pass, so
      // closed questions at the head cannot crowd open ones out of the page
      for (let start = 0; out.length < limit;) {
        const items = await openWork.page('openQuestions', start, limit)
        if (items.length === 0) break
        const stale: OpenItem[] = []
        for (const item of items) {
          const found = await logFor(item.sessionId).getQuestion(item.id)
          if (found && !found.answer.found && (found.question.expiresAt ?? Infinity) > Date.now()) {
            if (out.length < limit) out.push({ sessionId: item.sessionId, ...found.question })
          } else stale.push(item)
        }
        await openWork.drop('openQuestions', stale)
        start += items.length - stale.length
      }
      return out
    },
    async close({ timeoutMs } = {}) {
      const deadline = Date.now() + (timeoutMs ?? Infinity)
      const left = () => (timeoutMs === undefined ? undefined : Math.max(0, deadline - Date.now()))
      const closed = await Promise.all([...running].map((w) => w.close({ timeoutMs: left() })))
      // the queues share `redis`, whose commands wait for a reconnect, so this wait is bounded too
      await settleWithin(Promise.all([...queues.values()].flatMap((q) => [q.turns.close(), q.tools.close()])), left())
      await notifier.close()
      redis.disconnect()
      return { forced: closed.flatMap((c) => c.forced) }
    },
  }
}
