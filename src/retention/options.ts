import { RetentionConfigError } from '../errors/index.js'
import type { Logger } from 'pino'
import type { RedisClient, SessionLog, TrimPlan } from '../log/index.js'

/**
 * What is kept for how long (docs/retention.md). Without it nothing of a session is ever removed, and
 * BullMQ keeps finished jobs a day (completed) and a week (failed).
 */
export interface RetentionOptions {
  /**
   * A session is removed (every key of it: log, steps, calls, questions, inputs, projection) this long
   * after its last log entry, once nothing of it is open: no unsettled turn, no call queued, running or
   * parked. A parked call keeps its session however long it sleeps.
   */
  sessionMs: number
  /**
   * Gets the session's whole log as JSON Lines (`{"id","record"}` a line) before anything of it is
   * removed. If it throws, nothing is removed and a later pass tries again. With `span`, a trimmed
   * span (compaction.trimAfter): the entries before `span.before`, which leave Redis while the session
   * goes on; append them, since a session's spans and its final export follow each other in log order.
   */
  export(sessionId: string, jsonl: string, span?: { before: string }): void | Promise<void>
  /** How long BullMQ keeps a completed job (default 24 h; 0: removed when it completes). */
  completedJobsMs?: number
  /** How long BullMQ keeps a failed job (default 7 days). */
  failedJobsMs?: number
}

export interface Retention {
  sessionMs: number
  export(sessionId: string, jsonl: string, span?: { before: string }): void | Promise<void>
  keepJobs: { completedMs: number; failedMs: number }
}

const DAY = 24 * 3600_000

/** Checks the option once, at createHarnessHost; a bad value throws RetentionConfigError. */
export function retentionOf(options: RetentionOptions): Retention {
  if (typeof options !== 'object' || options === null) throw new RetentionConfigError('must be an object.')
  const ms = (name: string, value: unknown, min: number) => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min)
      throw new RetentionConfigError(`${name} must be a finite number of milliseconds >= ${min} (got ${String(value)}).`)
    return value
  }
  if (typeof options.export !== 'function')
    throw new RetentionConfigError('export must be a function (sessionId, jsonl): the log is exported before a session is removed.')
  return {
    sessionMs: ms('sessionMs', options.sessionMs, 1),
    export: options.export,
    keepJobs: {
      completedMs: ms('completedJobsMs', options.completedJobsMs ?? DAY, 0),
      failedMs: ms('failedJobsMs', options.failedJobsMs ?? 7 * DAY, 0),
    },
  }
}

/** What a retention pass works with (pass.ts, trim.ts). */
export interface RetentionDeps {
  redis: RedisClient
  prefix: string
  /** The deployment's shard count: each shard has its own sessions index. */
  shards: number
  logFor(sessionId: string): SessionLog
  retention: Retention
  logger: Logger
  /** Removes the finished BullMQ jobs of a trimmed span's turns and calls (the host's queues). */
  clearJobs?(sessionId: string, jobs: TrimPlan['jobs']): Promise<void>
}
