import type { Worker } from 'bullmq'
import type { Logger } from 'pino'
import { LockWatchingWorker } from '../call/index.js'
import { activeListOf, reclaimOf } from '../lane/index.js'
import { fenceAttempt, parseToolJobId, reclaimJob, type HeldJob, type OpenWork, type RedisClient, type SessionLog } from '../log/index.js'
import { closeWorkers } from './workers.js'

/**
 * The method of a `host.startWorkers()` handle that crashes its worker set, for the testing kit's
 * `env.crash(worker)` (issue 58): on the handle, not enumerable and not in the public types.
 */
export const CRASH_WORKERS = Symbol.for('durable-harness.crashWorkers')

const REASON = 'its worker set was crashed (a SIGKILL-equivalent, in a test)'
/** A lock renewal sent right before the crash can move a lock's expiry once between the look and the move: looked at again. */
const PASSES = 3
/** Active jobs looked at per queue and pass. */
const MAX_JOBS = 10_000

export interface CrashDeps {
  redis: RedisClient
  openWork: OpenWork
  logFor(sessionId: string): SessionLog
  logger: Logger
  /** The set's workers, each with the shard its queue is in. */
  workers: ReadonlyArray<{ worker: Worker; shard: number }>
  /** Stops the set's own loops (sweep, event timers, liveness, the abort listener), as its close does. */
  stopLoops(): void
}

/** Puts `crash` on `handle` under CRASH_WORKERS (not enumerable: a spread or JSON of the handle does not show it). */
export function crashable<H extends object>(handle: H, crash: () => Promise<void>): H {
  return Object.defineProperty(handle, CRASH_WORKERS, { value: crash, enumerable: false })
}

/**
 * What a killed worker process leaves, for one worker set of this process (its process lives on, so
 * a test can start another set and watch the recovery, docs/recovery.md):
 * - every attempt it runs is lost at once (AttemptLocks.loseAll): it stops before its next side
 *   effect and writes nothing more; a job fetched meanwhile runs nothing;
 * - its workers stop at once (`close(true)`: no fetch, no lock renewal, no completion sent), and its loops;
 * - each job it holds is taken as a gone process's is (reclaimJob.lua), without waiting for its
 *   lock; a tool call's running attempt is first fenced (fenceAttempt.lua), so a write of it still on
 *   its way (a step whose fn was in flight) is refused. The next attempt classifies the cut (rerun, cut).
 * What it cannot stop, as a zombie: user code already running (a step's fn) goes on until it returns.
 */
export async function crashWorkerSet(deps: CrashDeps): Promise<void> {
  deps.stopLoops()
  for (const { worker } of deps.workers) if (worker instanceof LockWatchingWorker) worker.locks.loseAll(REASON)
  await closeWorkers(
    deps.workers.map(({ worker }) => worker),
    { timeoutMs: 0 },
  )
  // after the close: a fetch sent before it (on the same connection) has its job active by now
  for (let pass = 0; pass < PASSES; pass++) if ((await moveHeldJobs(deps)) === 0) return
  deps.logger.warn('crashed worker set: some of its jobs could not be moved; they wait for their locks')
}

/** Moves every job the set's workers hold back to wait; the number of those whose lock changed first (not moved). */
async function moveHeldJobs(deps: CrashDeps): Promise<number> {
  let missed = 0
  for (const { worker, shard } of deps.workers) {
    const list = activeListOf(worker)
    if (!list) continue
    // the jobs whose lock token is one of this worker's (`<worker id>:<n>`); no token begins with NUL, so none is left out as own
    const look = {
      active: [list.active],
      queuePrefixes: [list.queuePrefix],
      claimMs: 0,
      livePrefix: `${worker.id}:`,
      own: '\0',
      maxJobs: MAX_JOBS,
    }
    const { held } = await deps.openWork.look(shard, Date.now(), 0, look)
    for (const job of held) if (!(await moveJob(deps, worker, job))) missed++
  }
  return missed
}

async function moveJob(deps: CrashDeps, worker: Worker, job: HeldJob): Promise<boolean> {
  const reclaim = reclaimOf(worker, job.jobId)
  if (!reclaim) return true
  const call = parseToolJobId(job.jobId)
  // fenced while the job is still held here: no newer attempt can have begun
  if (call) await fenceAttempt(deps.logFor(call.sessionId), call.toolCallId)
  if (!(await reclaimJob(deps.redis, job, reclaim))) return false
  deps.logger.warn({ ...call, queue: worker.name, jobId: job.jobId }, 'crashed worker set: job moved back to wait')
  return true
}
