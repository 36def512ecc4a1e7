// Errors of the session log and of Redis: fencing, malformed entries, storage and connection.
import { DurableHarnessError, causeText } from './base.js'
import { redactCredentials } from '../credentials.js'

/** A write carried a fencing epoch that is no longer current: a newer attempt owns the call. */
export class FencedError extends DurableHarnessError {
  constructor(
    readonly toolCallId: string,
    readonly epoch: number,
    readonly currentEpoch: number | null,
  ) {
    super(
      'fenced',
      `Tool call ${toolCallId}: attempt epoch ${epoch} was superseded (current epoch ${currentEpoch ?? 'none'}). ` +
        `Another worker owns this call now; this attempt must stop without writing.`,
    )
  }
}

/**
 * A tool call attempt lost its BullMQ job lock: its worker was blocked or paused past
 * `durability.lockMs`, so another worker's stalled check gave the job to a new attempt. It stops
 * before its next side effect (a step's fn, a tool's execute, a hook) and writes nothing more.
 */
export class LockLostError extends DurableHarnessError {
  constructor(
    readonly sessionId: string,
    readonly toolCallId: string,
    reason: string,
  ) {
    super(
      'lock_lost',
      `Tool call ${toolCallId} (session ${sessionId}): this attempt lost its job lock (${reason}). It stopped before ` +
        `its next side effect and wrote nothing more; the call goes on in the attempt that took its job over. ` +
        `If this happens often, find what blocks this worker's event loop for longer than durability.lockMs.`,
    )
  }
}

/** A stream entry that cannot be parsed or fails its schema on read. */
export class MalformedEntryError extends DurableHarnessError {
  constructor(
    readonly sessionId: string,
    readonly entryId: string,
    reason: string,
  ) {
    super(
      'malformed_entry',
      `Session ${sessionId}: log entry ${entryId} is malformed (${reason}). ` +
        `The session is marked; inspect the entry with XRANGE and remove or repair it.`,
    )
  }
}

/**
 * One of our Redis operations failed (Redis refused it, e.g. OOM, or the connection failed). The
 * cause is attached. A tool call's own writes are retried first; if they still fail the job fails and
 * the call is picked up again and classified as a cut, never landed as the tool's error.
 */
export class StorageError extends DurableHarnessError {
  constructor(
    readonly operation: string,
    readonly sessionId: string,
    cause: unknown,
  ) {
    super(
      'storage_error',
      `Redis failed ${operation} in session ${sessionId}: ${causeText(cause)}. Nothing of it is half-written ` +
        `(each write is one atomic script); check Redis (memory, connection) and retry.`,
      { cause },
    )
  }
}

/** Redis could not be reached at start. */
export class RedisUnavailableError extends DurableHarnessError {
  constructor(url: string, cause?: unknown) {
    super(
      'redis_unavailable',
      `Cannot reach Redis at ${redactCredentials(url)}. Start one (docker compose up -d redis) or set REDIS_URL.`,
      { cause },
    )
  }
}

/** Redis refused the credentials at start (WRONGPASS, NOAUTH). */
export class RedisAuthError extends DurableHarnessError {
  constructor(url: string, reply: string) {
    // no `cause`: ioredis errors carry the AUTH arguments, so printing one would print the password
    super(
      'redis_auth_failed',
      `Redis at ${redactCredentials(url)}: authentication failed (${redactCredentials(reply)}). ` +
        `Check the user and password in REDIS_URL.`,
    )
  }
}
