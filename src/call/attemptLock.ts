import { DelayedError, Worker, type Job, type Processor, type WorkerOptions } from 'bullmq'
import { LockLostError, StorageError } from '../errors/index.js'
import { parseToolJobId } from '../log/index.js'
import type { AttemptHold } from '../tool/index.js'

/**
 * How close to its end a lock is in doubt: from there on, a side effect starts only after the lock
 * was extended. It covers the time between the check and the side effect's first write, and timers
 * a little late; a healthy worker renews every lockMs / 2, so it never gets there.
 */
const doubtMs = (lockMs: number) => Math.ceil(lockMs / 10)

/**
 * What makes a worker process doubt every job lock it holds, whatever their time left: the connection
 * its locks are renewed on closed, so another process may have found it gone and moved its jobs
 * (src/liveness/). A lock last known held before the doubt is confirmed again.
 */
export interface LockDoubt {
  /** When the process last had cause to doubt its locks (ms; 0: never). */
  doubtedAt(): number
  /**
   * After a stall of the event loop (a pause, a long GC): resolves once the loop has read what came
   * meanwhile (a closed connection is seen before a timer's code goes on); undefined when none.
   */
  caughtUp(): Promise<void> | undefined
}

/**
 * What one tool (or turn) job attempt knows of its BullMQ lock: until when it is surely held. BullMQ set the
 * lock in moveToActive for lockMs, sent at `job.processedOn` (our clock, before Redis set it); every
 * renewal holds it from the time the renewal was sent. `confirm` costs nothing while the lock is surely
 * held; in doubt (a blocked event loop, a paused process) it extends the lock with the job's token, one
 * round trip, which fails when the lock expired or another worker holds it: the attempt is lost.
 */
export class AttemptLock implements AttemptHold {
  private heldUntil: number
  /** When the newest sign that the lock is held was sent (the fetch, a renewal, an extendLock). */
  private heldSince: number
  private lostError: LockLostError | null = null
  private extending: Promise<void> | undefined

  constructor(
    private readonly job: Job,
    private readonly token: string,
    private readonly lockMs: number,
    /** A tool job's attempt (default) or a turn job's. */
    private readonly of: 'tool call' | 'turn' = 'tool call',
    private readonly doubt?: LockDoubt,
  ) {
    // no processedOn (not from moveToActive): unknown, so the first side effect confirms it
    this.heldSince = job.processedOn ?? 0
    this.heldUntil = this.heldSince + lockMs
  }

  get lost(): LockLostError | null {
    return this.lostError
  }

  /** A renewal sent at `sentAt` extended the lock by `durationMs`. */
  renewed(sentAt: number, durationMs: number): void {
    this.heldUntil = Math.max(this.heldUntil, sentAt + durationMs)
    this.heldSince = Math.max(this.heldSince, sentAt)
  }

  /** The lock is known lost: nothing of this attempt runs or is written from here on. */
  lose(reason: string): void {
    const { sessionId, id } = this.owner()
    this.lostError ??= new LockLostError(sessionId, id, reason, { of: this.of })
  }

  /** The session and the call's (or turn's) id, from the job's id (`call|…`, `turn|<sid>|<inputId>`). */
  private owner(): { sessionId: string; id: string } {
    const jobId = this.job.id ?? ''
    if (this.of === 'turn') {
      const [, sessionId = '?', inputId = jobId] = jobId.split('|')
      return { sessionId, id: inputId }
    }
    const ids = parseToolJobId(jobId)
    return { sessionId: ids?.sessionId ?? '?', id: ids?.toolCallId ?? jobId }
  }

  /** Undefined (no promise, no await) while the lock is surely held: the check runs before every side effect. */
  confirm(): Promise<void> | undefined {
    if (this.lostError) throw this.lostError
    if (Date.now() >= this.heldUntil - doubtMs(this.lockMs)) return this.confirmInDoubt()
    if (!this.doubt) return undefined
    const caughtUp = this.doubt.caughtUp()
    if (!caughtUp) return this.doubted() ? this.confirmInDoubt() : undefined
    return caughtUp.then(() => (this.doubted() ? this.confirmInDoubt() : undefined))
  }

  /** The process doubted its locks since this lock was last known held. */
  private doubted(): boolean {
    return this.doubt !== undefined && this.heldSince <= this.doubt.doubtedAt()
  }

  private async confirmInDoubt(): Promise<void> {
    // one extendLock for every side effect waiting on it (parallel steps)
    await (this.extending ??= this.extend().finally(() => (this.extending = undefined)))
    if (this.lostError) throw this.lostError
  }

  private async extend(): Promise<void> {
    const sentAt = Date.now()
    let extended: number
    try {
      extended = await this.job.extendLock(this.token, this.lockMs)
    } catch (cause) {
      throw new StorageError('extendLock (the job lock, confirmed before a side effect)', this.owner().sessionId, cause)
    }
    if (extended === 1) this.renewed(sentAt, this.lockMs)
    else this.lose('it had expired, or another worker held it, when the attempt confirmed it before a side effect')
  }
}

/**
 * The locks of the attempts a worker runs, by job id and token: a zombie attempt and the one that took
 * its job over may run in one process, each with its own token.
 */
export class AttemptLocks {
  private readonly held = new Map<string, AttemptLock>()
  /** Set by loseAll: the worker set is gone as if killed, so no attempt starts here any more. */
  private crashed = false

  constructor(
    private readonly lockMs: number,
    /** The attempts of tool jobs (default) or of turn jobs. */
    private readonly of: 'tool call' | 'turn' = 'tool call',
    /** The process's doubt of its locks (src/liveness/), if another process may move its jobs. */
    private readonly doubt?: LockDoubt,
  ) {}

  /** Runs one attempt with its lock, known to renewals while it runs (none without a token: nothing to confirm). */
  async holding<T>(job: Job, token: string | undefined, work: (lock: AttemptLock | undefined) => Promise<T>): Promise<T> {
    // a job fetched as its workers crashed runs nothing (not even its begin); the crash moves it back to wait
    if (this.crashed) throw new DelayedError()
    if (!token || job.id === undefined) return work(undefined)
    const key = `${job.id}\0${token}`
    const lock = new AttemptLock(job, token, this.lockMs, this.of, this.doubt)
    this.held.set(key, lock)
    try {
      return await work(lock)
    } finally {
      if (this.held.get(key) === lock) this.held.delete(key)
    }
  }

  /**
   * Every attempt held here is lost at once, as if its process were killed (src/harness/crashWorkers.ts):
   * each stops before its next side effect and writes nothing more; no attempt starts after it.
   */
  loseAll(reason: string): void {
    this.crashed = true
    for (const lock of this.held.values()) lock.lose(reason)
  }

  /** BullMQ's renewal of these jobs' locks, sent at `sentAt`; those in `failed` were not renewed: lost. */
  renewed(jobIds: readonly string[], tokens: readonly string[], sentAt: number, durationMs: number, failed: readonly string[]): void {
    const refused = new Set(failed)
    jobIds.forEach((id, i) => {
      const lock = this.held.get(`${id}\0${tokens[i] ?? ''}`)
      if (!lock) return
      if (refused.has(id)) lock.lose('BullMQ could not renew it: it had expired, or another worker held it')
      else lock.renewed(sentAt, durationMs)
    })
  }
}

/**
 * A BullMQ worker that tells its attempts' locks of every renewal, with the time the renewal was sent
 * (its 'locksRenewed' event comes after the reply, maybe much later when the loop was busy: the lock
 * runs from before the send). Its lock manager calls `extendJobLocks` for each renewal.
 */
export class LockWatchingWorker<D> extends Worker<D> {
  constructor(
    name: string,
    processor: Processor<D>,
    options: WorkerOptions,
    readonly locks: AttemptLocks,
  ) {
    super(name, processor, options)
  }

  override async extendJobLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
    const sentAt = Date.now()
    const failed = await super.extendJobLocks(jobIds, tokens, duration)
    this.locks.renewed(jobIds, tokens, sentAt, duration, failed)
    return failed
  }
}
