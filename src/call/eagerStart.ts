import type { Job } from 'bullmq'
import { LockWatchingWorker } from './attemptLock.js'

/**
 * A tool queue's worker that starts a job's attempt as soon as its fetch returns it. BullMQ's fetch
 * loop fetches in sequence until a fetch comes back empty, and only then hands the jobs it fetched
 * to their slots: a job fetched right behind another (calls coming in while others run) waited for
 * the fetches after it, the last an empty moveToActive round trip, before its first step
 * (docs/decisions.md, "A tool job starts when its fetch returns it"). Here its attempt starts at once;
 * BullMQ's slot then waits on the running attempt instead of starting it (callProcessJob), and
 * completes or fails the job as before. The fetch set the lock for lockMs: held from the start (attemptLock.ts).
 */
export class EagerStartWorker<D> extends LockWatchingWorker<D> {
  private readonly started = new WeakMap<Job, Promise<unknown>>()

  protected override async nextJobFromJobData(...args: Parameters<LockWatchingWorker<D>['nextJobFromJobData']>): Promise<Job<D>> {
    const job = await super.nextJobFromJobData(...args)
    // a job BullMQ would fail without running it (a deferred failure) goes its own way
    if (job?.token && !job.deferredFailure && !this.opts.maxStartedAttempts) this.startNow(job, job.token)
    return job
  }

  protected override callProcessJob(job: Job<D>, token: string, signal?: AbortSignal): Promise<unknown> {
    const running = this.started.get(job)
    if (!running) return super.callProcessJob(job, token, signal)
    this.started.delete(job)
    return running
  }

  private startNow(job: Job<D>, token: string): void {
    // a processor that throws at once rejects its promise instead, as BullMQ's own call would
    const running = (async () => this.processFn(job, token))()
    // awaited by BullMQ's slot: a rejection is handled there, never left unhandled meanwhile
    running.catch(() => {})
    this.started.set(job, running)
  }
}
