import { createRequire } from 'node:module'
import type { Job, JobsOptions, Processor, Queue, Worker, WorkerOptions } from 'bullmq'
import { UnverifiedBullmqError } from '../errors/index.js'
import { dropStaleMarker, type JobReclaim, type JobStart, type RedisClient, type StartReply } from '../log/index.js'
import { LockWatchingWorker, type AttemptLocks } from '../call/index.js'
import { afterSendTo } from './sendHooks.js'

// The one module that knows BullMQ's private layout: the Worker members the lane overrides or reads
// (mainLoopQueue, waiting, keys, toKey, moveToActive, nextJobFromJobData, callProcessJob, processJob,
// the Job constructor), the worker id its lock tokens begin with, and the keys of the BullMQ structures
// startCall.lua, dropStaleMarker.lua, lookAtShard.lua and reclaimJob.lua read and write. Checked
// against the BullMQ it was verified with (docs/decisions/local-lane-seam.md, docs/decisions/worker-liveness.md).

/** The BullMQ versions these overrides and scripts were checked against (test/integration/laneContract.test.ts). */
export const VERIFIED_BULLMQ = '6.7.x'

/** The installed bullmq's version, read from its package.json when this module loads ('unknown' if it has none). */
export const installedBullmq = versionOf(createRequire(import.meta.url)('bullmq/package.json'))

function versionOf(manifest: unknown): string {
  const version = typeof manifest === 'object' && manifest !== null && 'version' in manifest ? manifest.version : undefined
  return typeof version === 'string' ? version : 'unknown'
}

/** Whether `version` is in VERIFIED_BULLMQ. */
export const isVerifiedBullmq = (version = installedBullmq): boolean => /^6\.7\.\d+$/.test(version)

/** Throws UnverifiedBullmqError unless `version` is in VERIFIED_BULLMQ (a local lane is on only then). */
export function assertVerifiedBullmq(version = installedBullmq): void {
  if (!isVerifiedBullmq(version)) throw new UnverifiedBullmqError(version, VERIFIED_BULLMQ)
}

/** The lock tokens of a worker named after its process (nameAfterProcess) begin with this. */
export const LIVE_TOKEN = 'dh-live-'

let named = 0

/**
 * Names `worker` after its process, before it runs: every lock token a BullMQ worker takes is
 * `<worker id>:<n>` (its loop's fetches, and the lane's `:now`/`:start` ones), so a job's lock then
 * says which process holds it (src/liveness/; laneContract.test.ts checks the token's form).
 */
export function nameAfterProcess(worker: Worker, processPrefix: string): void {
  Object.assign(worker, { id: `${processPrefix}${named++}` })
}

/** The active list of `worker`'s queue and its job keys' prefix (a job's lock is `<prefix><jobId>:lock`). */
export function activeListOf(worker: Worker): { active: string; queuePrefix: string } | undefined {
  const { active } = worker.keys
  return active ? { active, queuePrefix: worker.toKey('') } : undefined
}

/** reclaimJob.lua's keys for job `jobId` of `worker`'s queue, and the queue's maxStalledCount (BullMQ's stalled check's). */
export function reclaimOf(worker: Worker, jobId: string): JobReclaim | undefined {
  const { active, wait, stalled, meta, marker, events } = worker.keys
  if (!active || !wait || !stalled || !meta || !marker || !events) return undefined
  const job = worker.toKey(jobId)
  const keys = { job, lock: `${job}:lock`, active, wait, stalled, meta, marker, events }
  return { keys, maxStalledCount: worker.opts.maxStalledCount ?? 1 }
}

/** BullMQ's fetch loop's queue of fetches and running jobs (Worker's private `mainLoopQueue`). */
interface FetchQueue {
  add(fetched: Promise<unknown>): void
  numTotal(): number
}

/** A tool job as queue/enqueue.ts's toolJob makes it. */
export interface LaneJob<D> {
  name: string
  data: D
  opts: JobsOptions
}

/** A slot of a lane held for a job its request's write starts: the script's part, and what to do with its reply. */
export interface LaneStart {
  job: JobStart
  sent(reply: Promise<StartReply>): void
}

/**
 * The tool queue's keys and the job's fields startCall.lua writes, for a job started under `token` on
 * `worker`'s queue (`wake`: the lane waits on the marker). Undefined for a job the script cannot start
 * (a parent, a priority, a delay; a worker with its own rate limiter): it is added as ever.
 */
export function laneJobStart<D>(worker: Worker<D>, job: LaneJob<D>, token: string, wake: boolean): JobStart | undefined {
  const { opts } = job
  const { active, wait, prioritized, marker, meta, events, id } = worker.keys
  const lockMs = worker.opts.lockDuration
  if (!opts.jobId || opts.parent || opts.priority || opts.delay || worker.opts.limiter || !lockMs) return undefined
  if (!active || !wait || !prioritized || !marker || !meta || !events || !id) return undefined
  return {
    keys: { job: worker.toKey(opts.jobId), active, wait, prioritized, marker, meta, events, id },
    args: {
      jobId: opts.jobId,
      data: JSON.stringify(job.data),
      opts: JSON.stringify(opts),
      token,
      lockMs,
      worker: worker.opts.name ?? '',
      wake: wake ? '1' : '',
    },
  }
}

/** Runs `then` right after the next job add on `queue` is written on `client` in this tick (BullMQ's add: a script whose first key is the wait list). */
export function afterJobAdd(client: RedisClient, queue: Queue, then: () => void): void {
  const wait = queue.keys.wait
  if (wait) afterSendTo(client, wait, then)
}

/**
 * A tool queue's worker that starts a job's attempt as soon as its fetch returns it. BullMQ's fetch
 * loop fetches in sequence until a fetch comes back empty, and only then hands the jobs it fetched
 * to their slots: a job fetched right behind another waited for the fetches after it, the last an
 * empty round trip, before its first step (docs/decisions/eager-start-worker.md; "A tool job starts when its fetch
 * returns it"). Here its attempt starts at once; BullMQ's slot then waits on the running attempt
 * (callProcessJob), and completes or fails the job as before. After a fetch that found the queue
 * empty, the marker BullMQ's fetch of a job set again is dropped when no job waits, so the lane's next
 * wait blocks instead of fetching nothing a second time (the same record).
 */
export class EagerStartWorker<D> extends LockWatchingWorker<D> {
  private readonly started = new WeakMap<Job, Promise<unknown>>()
  /** Jobs whose attempt ended and whose BullMQ completion is on its way: their slots run no tool code. */
  private readonly ending = new Set<Job>()
  private fetchedOne = false
  private fetchedNow = 0
  private startTokens = 0
  /** fetchNow's marker drop: whether the queue was empty right after its fetch. */
  private emptyBehind: Promise<boolean> | undefined

  /** `redis`: the connection of `options`, for the marker's drop; `startedHere`: where jobs started by reserveStart are noted. */
  constructor(
    name: string,
    processor: Processor<D>,
    options: WorkerOptions,
    locks: AttemptLocks,
    private readonly redis: RedisClient | undefined,
    private readonly startedHere: WeakSet<Job>,
  ) {
    super(name, processor, options, locks)
  }

  protected override async moveToActive(token: string, name?: string): Promise<Job<D>> {
    const behind = this.emptyBehind
    this.emptyBehind = undefined
    // the queue was empty right after fetchNow's fetch (its marker dropped): this fetch, the one the
    // add's marker woke the lane for, would find nothing; the lane waits again instead
    if (behind && (await behind)) {
      this.fetchedOne = false
      return this.nextJobFromJobData(undefined, undefined, token)
    }
    const job = await super.moveToActive(token, name)
    if (job) return job
    // a fetch of a job since the last empty one set the queue's marker for the next; this fetch found
    // the queue empty, so a marker still set is stale: dropped, else the next wait returns at once
    const afterAJob = this.fetchedOne
    this.fetchedOne = false
    if (afterAJob) await this.dropMarkerIfStale()
    return job
  }

  /** True when no job waited and the marker was dropped; false when a job waits or the drop failed. */
  private dropMarkerIfStale(): Promise<boolean> {
    const { marker, wait, prioritized } = this.keys
    if (!this.redis || !marker || !wait || !prioritized) return Promise.resolve(false)
    // a failed drop leaves the marker: one more empty fetch, as before
    return dropStaleMarker(this.redis, { marker, wait, prioritized }).catch(() => false)
  }

  protected override async nextJobFromJobData(...args: Parameters<LockWatchingWorker<D>['nextJobFromJobData']>): Promise<Job<D>> {
    const job = await super.nextJobFromJobData(...args)
    if (job) this.fetchedOne = true
    return this.startFetched(job)
  }

  private startFetched(job: Job<D>): Job<D> {
    // a job BullMQ would fail without running it (a deferred failure) goes its own way
    if (job?.token && !job.deferredFailure && !this.opts.maxStartedAttempts) this.startNow(job, job.token)
    return job
  }

  protected override callProcessJob(job: Job<D>, token: string, signal?: AbortSignal): Promise<unknown> {
    let running = this.started.get(job)
    if (running) this.started.delete(job)
    else running = super.callProcessJob(job, token, signal)
    // its attempt over (the tool returned or threw), the job only waits for BullMQ's completion
    const ended = () => this.ending.add(job)
    running.then(ended, ended)
    return running
  }

  override async processJob(job: Job<D>, token: string, fetchNextCallback?: () => boolean): Promise<void | Job<D>> {
    try {
      return await super.processJob(job, token, fetchNextCallback)
    } finally {
      this.ending.delete(job)
    }
  }

  /**
   * Fetches a job now, on this lane's connection, right behind a job add just sent there in the same
   * tick (runTool's, in this process): Redis runs the fetch after the add, so the job starts when the
   * add's reply would have come (docs/decisions/local-runtool-start.md).
   * Only while the lane waits for jobs with a free slot; the fetched job joins BullMQ's own loop.
   */
  fetchNow(): void {
    const fetching: FetchQueue | null = this['mainLoopQueue']
    if (!fetching || !this['waiting'] || this.closing || this.isPaused() || fetching.numTotal() >= this.concurrency) return
    const token = `${this.id}:now${this.fetchedNow++}`
    // right behind the fetch, in the same write: the stale-marker drop; when it finds the queue empty,
    // the lane's fetch after the add's wake-up is not sent (moveToActive), one round trip less
    const { redis, keys } = this
    if (redis && keys.wait)
      afterSendTo(redis, keys.wait, () => {
        this.emptyBehind = this.dropMarkerIfStale()
      })
    const fetched = super.moveToActive(token, this.opts.name).catch((error: unknown) => {
      this.emit('error', error instanceof Error ? error : new Error(String(error)))
      return undefined
    })
    fetching.add(fetched)
  }

  /**
   * Holds a slot of this lane for a new runTool call of this process whose request's write starts its
   * job (startCall.lua: made active under this slot's lock token), so the job runs when that write's
   * reply comes (docs/decisions/local-runtool-start.md). Undefined
   * when the lane cannot run it now (closing, paused, every slot taken) or laneJobStart refuses the
   * job. The slot is BullMQ's own: a fetch of its loop's queue that resolves with the job.
   */
  reserveStart(job: LaneJob<D>): LaneStart | undefined {
    const fetching: FetchQueue | null = this['mainLoopQueue']
    // a slot whose job's attempt ended counts as free: BullMQ only completes it
    if (!fetching || this.closing || this.isPaused() || fetching.numTotal() - this.ending.size >= this.concurrency) return undefined
    const token = `${this.id}:start${this.startTokens}`
    // a lane that waits on the queue's marker: the script sets it, and the lane's fetch after its
    // wake-up is not sent when no other job waits (moveToActive, as behind fetchNow)
    const waits = Boolean(this['waiting'])
    const start = laneJobStart(this, job, token, waits)
    if (!start) return undefined
    this.startTokens++
    let take!: (job: Job<D> | undefined) => void
    fetching.add(new Promise<Job<D> | undefined>((resolve) => (take = resolve)))
    return {
      job: start,
      sent: (reply) => {
        if (waits)
          this.emptyBehind = reply.then(
            (r) => r.status === 'started' && r.emptyBehind,
            () => false,
          )
        reply
          .then((r) => {
            if (r.status !== 'started') return take(undefined)
            // another job waits: BullMQ's own reading, which marks the lane not drained (its next fetch is no blocking wait)
            if (!r.emptyBehind) return this.startStored(job, start, r.now).then(take)
            take(this.startMade(job, start, r.now))
          })
          // the reply failed (the caller hears it), or a started job could not be taken: the slot is given
          // back; a job left active without its lane loses its lock, and the stalled check hands it on
          .catch(() => take(undefined))
      },
    }
  }

  /** The job startCall.lua started, as its hash holds it, made from what was sent: no parse of its data again. */
  private startMade(job: LaneJob<D>, start: JobStart, now: number): Job<D> {
    const { jobId, token, worker } = start.args
    const started = new this.Job(this, job.name, job.data, job.opts, jobId)
    started.timestamp = now
    started.processedOn = now
    started.attemptsStarted = 1
    started.token = token
    if (worker) started.processedBy = worker
    this.startedHere.add(started)
    this.emit('active', started, 'waiting')
    return this.startFetched(started)
  }

  /** The job startCall.lua started, through BullMQ's reading of its hash (a job as moveToActive returns it). */
  private async startStored(job: LaneJob<D>, start: JobStart, now: number): Promise<Job<D>> {
    const { jobId, token, worker, data } = start.args
    const stored = { id: jobId, name: job.name, data, opts: job.opts, timestamp: now, delay: 0, priority: 0, processedOn: now }
    const json = { ...stored, progress: 0, attemptsStarted: 1, attemptsMade: 0, stalledCounter: 0, failedReason: '', returnvalue: 'null' }
    const started = await super.nextJobFromJobData(worker ? { ...json, processedBy: worker } : json, jobId, token)
    if (started) this.startedHere.add(started)
    return this.startFetched(started)
  }

  private startNow(job: Job<D>, token: string): void {
    // a processor that throws at once rejects its promise instead, as BullMQ's own call would
    const running = (async () => this.processFn(job, token))()
    // awaited by BullMQ's slot: a rejection is handled there, never left unhandled meanwhile
    running.catch(() => {})
    this.started.set(job, running)
  }
}
