import { Worker, type ConnectionOptions } from 'bullmq'
import { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { isAuthFailure } from '../credentials.js'
import { AttemptLocks, LockWatchingWorker, processToolJob, type CallAborts, type LockDoubt } from '../call/index.js'
import type { Harness } from '../core/index.js'
import { parseToolJobId, type CallMarks, type SessionLog } from '../log/index.js'
import { bullPrefix, finishedJobs, toolQueueName, turnQueueName, type HarnessQueues, type TurnJobData } from '../queue/index.js'
import { callAttemptSpan, observeTurn, turnSpan } from '../telemetry/index.js'
import { FetchLanes } from './fetchLanes.js'
import type { LocalLane } from '../lane/index.js'
import type { AgentHost } from '../fanout/index.js'
import { processTurnJob } from '../turn/index.js'

export interface WorkerSetOptions {
  harness: Harness
  queues: HarnessQueues
  connection: ConnectionOptions
  prefix: string
  /** The shard these workers serve, of `shards`. */
  shard: number
  shards: number
  concurrency: number
  logFor(sessionId: string): SessionLog
  queuesOf(harness: Harness): HarnessQueues
  /** Queues of a harness by name, if this host runs it. */
  queuesByName(name: string): HarnessQueues | undefined
  /** The host's harnesses, for child agents (ctx.agents). */
  agents: AgentHost
  aborts: CallAborts
  logger: Logger
  /** The deployment's call marks (a marked runTool job skips its begin on its first delivery). */
  callMarks?(): CallMarks | undefined
  /** How long finished jobs are kept (retention; default DEFAULT_FINISHED_JOBS). */
  keepJobs?: { completedMs: number; failedMs: number }
  /** The host's local lane: the tool workers it makes, and whose new calls they take. */
  lane: LocalLane
  /** The process's doubt of its job locks, when other processes may find it gone (src/liveness/). */
  doubt?: LockDoubt | undefined
}

/**
 * The turn and tool workers of one harness in one shard; they start when the caller runs them
 * (`autorun: false`: the host first checks the deployment's shard count). Lock and stalled-check intervals come from the harness's
 * durability options so a dead worker's job is picked up again in seconds; a stalled job is never
 * failed by BullMQ (maxStalledCount is unbounded): our begin/fold classifies it instead.
 */
export function startWorkerSet(options: WorkerSetOptions): Worker[] {
  const { harness, queues, connection, prefix, shard, shards, concurrency, logFor, queuesOf, queuesByName, agents, aborts, logger } =
    options
  const common = {
    connection,
    prefix: bullPrefix(prefix, shard, shards),
    autorun: false,
    concurrency,
    lockDuration: harness.durability.lockMs,
    // BullMQ checks for stalled jobs at half our stalledMs: a check is skipped when it finds the last
    // one's `stalled-check` key (set for one interval) not yet expired, which a timer a hair early or a
    // check by the worker that was just killed can cause; at half the interval one skipped check still
    // keeps the rerun within lockMs + stalledMs (bench 4). A check is one small script per queue.
    stalledInterval: Math.max(1, Math.floor(harness.durability.stalledMs / 2)),
    maxStalledCount: Number.MAX_SAFE_INTEGER,
    ...finishedJobs(options.keepJobs),
  }
  // BullMQ sends a job's completion on the connection it was given (a Redis instance it shares): our
  // landing goes there right before it, one round trip for both (not on a Cluster: a redirect could reorder them)
  const completesOn = connection instanceof Redis && !connection.isCluster ? connection : undefined
  // each attempt knows until when its job lock is surely held: a zombie runs no side effect (attemptLock.ts)
  const locks = new AttemptLocks(harness.durability.lockMs, 'tool call', options.doubt)
  // the tool queue's slots are split over lanes, each a BullMQ worker with its own fetch loop (laneSizes);
  // the lanes past the first fetch only while the queue is busy (fetchLanes.ts)
  const lanes = new FetchLanes()
  const { lane: local } = options
  const tools = laneSizes(concurrency).map((slots) =>
    local.toolWorker(
      toolQueueName(harness.name),
      (job, token) =>
        lanes.run(() =>
          // the span names the session and call of the job's id, which its data cannot change
          callAttemptSpan(
            () => ({ ...job.data, ...(parseToolJobId(job.id ?? '') ?? { sessionId: '', toolCallId: '' }), name: job.name }),
            () =>
              locks.holding(job, token, (lock) =>
                processToolJob(job, token, {
                  harness,
                  logFor,
                  queuesOf,
                  agents,
                  aborts,
                  logger,
                  marks: options.callMarks?.(),
                  startedHere: local.startedHere(job),
                  lock,
                  completesOn,
                }),
              ),
          ),
        ),
      { ...common, concurrency: slots },
      locks,
    ),
  )
  lanes.serve(tools.slice(1))
  // a runTool call of this process starts on, or is fetched by, these lanes (src/lane/)
  local.serve(queues, shard, tools, completesOn)
  for (const lane of tools) lane.once('closing', () => lanes.stop())
  // a turn attempt makes a model call only while it holds its job lock (a paused worker's does not)
  const turnLocks = new AttemptLocks(harness.durability.lockMs, 'turn', options.doubt)
  const turns = new LockWatchingWorker<TurnJobData>(
    turnQueueName(harness.name),
    (job, token) =>
      turnSpan(job.data, job.attemptsMade + 1, () =>
        turnLocks.holding(job, token, async (lock) => {
          await processTurnJob(job, token, { harness, queues, queuesByName, logFor, logger, aborts, lock })
          observeTurn(harness.name, job.timestamp)
        }),
      ),
    common,
    turnLocks,
  )
  for (const worker of [...tools, turns]) {
    worker.on('error', backOffOnErrors(worker, logger))
    worker.on('failed', (job, err) => {
      const data = job?.data
      // a parked tool job's data names neither its session nor its call: its id does
      const ids = parseToolJobId(job?.id ?? '')
      logger.warn(
        {
          err,
          queue: worker.name,
          jobId: job?.id,
          sessionId: ids?.sessionId ?? data?.sessionId,
          toolCallId: ids?.toolCallId,
          inputId: data?.inputId,
          attempt: job?.attemptsMade,
        },
        'job failed',
      )
    })
  }
  return [...tools, turns]
}

/**
 * Slots a fetch lane serves by default: with more, slots wait on their lane's loop; with fewer, more
 * lanes (and blocking connections). The lanes past the first fetch only while the queue is busy
 * (fetchLanes.ts), so a call that comes in alone does not wake them.
 */
const SLOTS_PER_LANE = 10

/**
 * How `concurrency` slots are split over fetch lanes (each a BullMQ worker of the same queue): a
 * BullMQ worker fetches one job at a time (a round trip each, or two from an empty queue: the wake-up,
 * then the move), so at high concurrency, with jobs coming in one by one, its slots wait for its
 * fetch loop rather than for Redis or the CPU (docs/decisions/fetch-lanes.md).
 * `lanes` defaults to one per SLOTS_PER_LANE slots; the sizes differ by one at most and add up to `concurrency`.
 */
export function laneSizes(concurrency: number, lanes = Math.ceil(concurrency / SLOTS_PER_LANE)): number[] {
  const count = Math.max(1, Math.min(Math.floor(lanes), concurrency))
  return Array.from({ length: count }, (_, i) => Math.floor(concurrency / count) + (i < concurrency % count ? 1 : 0))
}

/** How long a worker stops fetching after an error BullMQ would retry at once, and how often such an error is logged. */
const ERROR_BACKOFF_MS = 1_000
const ERROR_LOG_EVERY_MS = 10_000

/**
 * BullMQ retries a failed fetch at once unless the error looks like a lost connection: a refused
 * password (WRONGPASS, NOAUTH) fails every fetch at once, and the worker spins, starving the event
 * loop so that not even SIGTERM is handled. On such an error the worker pauses for a moment (no
 * fetches, active jobs go on), then resumes; the error is logged once per ERROR_LOG_EVERY_MS.
 */
function backOffOnErrors(worker: Worker, logger: Logger): (err: Error) => void {
  let lastLogged = 0
  let suppressed = 0
  let pausedUntil = 0
  return (err) => {
    const now = Date.now()
    if (now - lastLogged >= ERROR_LOG_EVERY_MS) {
      logger.error(
        { err, queue: worker.name, ...(suppressed ? { suppressed } : {}) },
        isAuthFailure(err) ? 'worker error: Redis refused the credentials' : 'worker error',
      )
      lastLogged = now
      suppressed = 0
    } else suppressed++
    if (now < pausedUntil || worker.closing) return
    pausedUntil = now + ERROR_BACKOFF_MS
    void worker.pause(true).catch(() => {})
    setTimeout(() => {
      if (!worker.closing) void worker.resume()
    }, ERROR_BACKOFF_MS).unref()
  }
}

/** How long a close waits for active jobs. */
export interface CloseOptions {
  /**
   * Wait at most this long for a graceful close (active jobs finish first), then stop waiting; 0 force-closes
   * at once (`worker.close(true)`: active jobs are not awaited). Default: wait as long as it takes.
   */
  timeoutMs?: number
}

/** What a close could not finish gracefully. */
export interface CloseResult {
  /** Queues whose workers did not close gracefully in time; their active jobs return to the queue when their locks expire. */
  forced: string[]
}

/** Resolves when `work` settles or after `timeoutMs` (never, if undefined), whichever is first. */
export async function settleWithin(work: Promise<unknown>, timeoutMs: number | undefined): Promise<void> {
  if (timeoutMs === undefined) return void (await work)
  let timer: NodeJS.Timeout | undefined
  await Promise.race([work.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
  clearTimeout(timer)
}

/**
 * Closes workers, gracefully unless `timeoutMs` is 0. A BullMQ close waits for its blocking connection's
 * 'end', which a connection waiting out a reconnect backoff (Redis restarted or down) never emits
 * (bullmq#4656): `endBackoff` first turns such a connection into a ready or an ended one. Past
 * `timeoutMs` we stop waiting for a close (BullMQ memoizes close(), so close(true) cannot rescue one)
 * and report its queue.
 */
export async function closeWorkers(workers: readonly Worker[], { timeoutMs }: CloseOptions = {}): Promise<CloseResult> {
  await Promise.all(workers.map(endBackoff))
  if (timeoutMs === 0) {
    await Promise.all(workers.map((w) => w.close(true)))
    return { forced: workers.map((w) => w.name) }
  }
  const open = new Set(workers)
  await settleWithin(Promise.allSettled(workers.map((w) => w.close().then(() => open.delete(w)))), timeoutMs)
  return { forced: [...open].map((w) => w.name) }
}

/**
 * A blocking connection in ioredis' `reconnecting` state has no socket: disconnecting it only clears its
 * timer and it stays `reconnecting` for good. Cleared here (disconnect marks the close as ours) and tried once
 * at once: it comes up ready, which BullMQ's close then ends as usual, or fails and ends.
 */
async function endBackoff(worker: Worker): Promise<void> {
  const connection = worker.backend.blockingConnection
  // a connection that never came up leaves its client promise pending, or rejected: neither is waited for
  const pending = new Promise<undefined>((r) => setImmediate(() => r(undefined)))
  const client = connection && (await Promise.race([connection.client.catch(() => undefined), pending]))
  if (client?.status !== 'reconnecting') return
  client.disconnect()
  await client.connect().catch(() => {})
}
