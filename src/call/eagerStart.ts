import type { Job, JobsOptions, Processor, WorkerOptions } from 'bullmq'
import { afterSendTo, dropStaleMarker, type RedisClient } from '../log/index.js'
import type { LaneStart } from '../queue/index.js'
import { LockWatchingWorker, type AttemptLocks } from './attemptLock.js'

/** BullMQ's fetch loop's queue of fetches and running jobs (Worker's private `mainLoopQueue`). */
interface FetchQueue {
  add(fetched: Promise<unknown>): void
  numTotal(): number
}

/**
 * A tool queue's worker that starts a job's attempt as soon as its fetch returns it. BullMQ's fetch
 * loop fetches in sequence until a fetch comes back empty, and only then hands the jobs it fetched
 * to their slots: a job fetched right behind another (calls coming in while others run) waited for
 * the fetches after it, the last an empty moveToActive round trip, before its first step
 * (docs/decisions/eager-start-worker.md). Here its attempt starts at once;
 * BullMQ's slot then waits on the running attempt instead of starting it (callProcessJob), and
 * completes or fails the job as before. The fetch set the lock for lockMs: held from the start (attemptLock.ts).
 * And BullMQ's fetch of a job sets the queue's marker again for the next fetch: once a fetch finds the
 * queue empty, a lane's next wait took that stale marker and fetched nothing a second time, between a
 * lone call's steps. That marker is dropped when no job waits (same record).
 */
export class EagerStartWorker<D> extends LockWatchingWorker<D> {
  private readonly started = new WeakMap<Job, Promise<unknown>>()
  /** Jobs whose attempt ended and whose BullMQ completion is on its way: their slots run no tool code. */
  private readonly ending = new Set<Job>()
  private fetchedOne = false
  private fetchedNow = 0
  private startTokens = 0
  private readonly startedHere = new WeakSet<Job>()
  /** fetchNow's marker drop: whether the queue was empty right after its fetch. */
  private emptyBehind: Promise<boolean> | undefined

  /** `redis`: the connection of `options`, for the marker's drop (none: the marker stays, as BullMQ leaves it). */
  constructor(
    name: string,
    processor: Processor<D>,
    options: WorkerOptions,
    locks: AttemptLocks,
    private readonly redis?: RedisClient,
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
    // a fetch of a job since the last empty one (this lane's, or fetchNow's sent beside it) set the
    // queue's marker for the next; this fetch found the queue empty, so a marker still set is stale:
    // dropped, else the next wait returns at once to fetch nothing again
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
   * add's reply would have come, without the round trip of the lane's wake-up and fetch after it
   * (docs/decisions/local-runtool-start.md). Only while the lane waits
   * for jobs with a free slot; the fetched job joins BullMQ's own loop, which completes it as ever.
   */
  fetchNow(): void {
    const fetching: FetchQueue | null = this['mainLoopQueue']
    if (!fetching || !this['waiting'] || this.closing || this.isPaused() || fetching.numTotal() >= this.concurrency) return
    const token = `${this.id}:now${this.fetchedNow++}`
    // right behind the fetch, in the same write: the stale-marker drop. The add's marker woke the lane
    // all the same (Redis serves its wait right after the add); when the drop finds the queue empty,
    // the lane's fetch after that wake-up is not sent (moveToActive), one command and round trip less
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
   * Holds a slot of this lane for a new runTool call of this process whose request's write starts
   * its job (startCall.lua: the job made active under this slot's lock token), so the job runs when
   * that write's reply comes, with no add, fetch or wake-up of its own (docs/decisions/local-runtool-start.md).
   * Undefined when the lane cannot run it now (closing, paused, every slot taken) or the job is not a
   * plain one (a parent, a priority, a delay): the call is added to the queue as ever. The slot is
   * BullMQ's own: a fetch of its loop's queue that resolves with the job, which BullMQ then completes
   * as any job it fetched.
   */
  reserveStart(job: { name: string; data: D; opts: JobsOptions }): LaneStart | undefined {
    const fetching: FetchQueue | null = this['mainLoopQueue']
    // a slot whose job's attempt ended counts as free: its tool code is done, BullMQ only completes it
    // (a caller woken by the landing calls again before that completion is back)
    if (!fetching || this.closing || this.isPaused() || fetching.numTotal() - this.ending.size >= this.concurrency) return undefined
    const { opts } = job
    const { active, wait, prioritized, marker, meta } = this.keys
    const lockMs = this.opts.lockDuration
    if (!opts.jobId || opts.parent || opts.priority || opts.delay || !lockMs || !active || !wait || !prioritized || !marker || !meta)
      return undefined
    const jobId = opts.jobId
    const token = `${this.id}:start${this.startTokens++}`
    // a lane that waits on the queue's marker: the script sets it, and the lane's fetch after its
    // wake-up is not sent when no other job waits (moveToActive, as behind fetchNow)
    const waits = Boolean(this['waiting'])
    let take!: (job: Job<D> | undefined) => void
    fetching.add(new Promise<Job<D> | undefined>((resolve) => (take = resolve)))
    const data = JSON.stringify(job.data)
    const worker = this.opts.name ?? ''
    return {
      job: {
        keys: { job: this.toKey(jobId), active, wait, prioritized, marker, meta },
        args: { jobId, data, opts: JSON.stringify(opts), token, lockMs, worker, wake: waits ? '1' : '' },
      },
      sent: (reply) => {
        if (waits)
          this.emptyBehind = reply.then(
            (r) => r.status === 'started' && r.emptyBehind,
            () => false,
          )
        reply
          .then((r) => {
            if (r.status !== 'started') return take(undefined)
            // another job waits: BullMQ's own path, which marks the lane not drained (its next fetch is no blocking wait)
            if (!r.emptyBehind) return this.startStored(job, jobId, data, r.now, token, worker).then(take)
            // the job as its hash holds it (startCall.lua), made here from what was sent: no parse of its data again
            const started = new this.Job(this, job.name, job.data, opts, jobId)
            started.timestamp = r.now
            started.processedOn = r.now
            started.attemptsStarted = 1
            started.token = token
            if (worker) started.processedBy = worker
            this.startedHere.add(started)
            this.emit('active', started, 'waiting')
            take(this.startFetched(started))
          })
          // the reply failed (the caller hears it), or a started job could not be taken: the slot is given
          // back; a job left active without its lane loses its lock, and the stalled check hands it on
          .catch(() => take(undefined))
      },
    }
  }

  /** A started job through BullMQ's reading of its hash (a job as moveToActive returns it). */
  private async startStored(
    job: { name: string; data: D; opts: JobsOptions },
    jobId: string,
    data: string,
    now: number,
    token: string,
    worker: string,
  ) {
    const stored = { id: jobId, name: job.name, data, opts: job.opts, timestamp: now, delay: 0, priority: 0, processedOn: now, progress: 0 }
    const json = { ...stored, attemptsStarted: 1, attemptsMade: 0, stalledCounter: 0, failedReason: '', returnvalue: 'null' }
    const started = await super.nextJobFromJobData(worker ? { ...json, processedBy: worker } : json, jobId, token)
    if (started) this.startedHere.add(started)
    return this.startFetched(started)
  }

  /**
   * True for a job this lane started in its request's write (reserveStart): the request that began
   * the call, with this job's data, was written by this process in the same script, so the job's
   * first attempt skips its begin without checking its call mark (loggedCall.ts).
   */
  wasStartedHere(job: Job<D>): boolean {
    return this.startedHere.has(job)
  }

  private startNow(job: Job<D>, token: string): void {
    // a processor that throws at once rejects its promise instead, as BullMQ's own call would
    const running = (async () => this.processFn(job, token))()
    // awaited by BullMQ's slot: a rejection is handled there, never left unhandled meanwhile
    running.catch(() => {})
    this.started.set(job, running)
  }
}
