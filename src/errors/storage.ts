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
 * A tool call (or turn) attempt lost its BullMQ job lock, or its limit slot's lease (R17): its worker
 * was blocked or paused past `durability.lockMs`, so another worker's stalled check gave the job to a
 * new attempt, and the slot's room may be another call's. It stops before its next side effect (a
 * step's fn, a tool's execute, a hook, a model call) and writes nothing more.
 */
export class LockLostError extends DurableHarnessError {
  constructor(
    readonly sessionId: string,
    /** The tool call's id (a turn attempt's: its input id). */
    readonly toolCallId: string,
    reason: string,
    /** What the attempt lost: its job lock (default) or its limit slot's lease; an attempt of a tool call (default) or of a turn. */
    readonly lost: { hold?: 'job lock' | 'limit slot'; of?: 'tool call' | 'turn' } = {},
  ) {
    const of = lost.of ?? 'tool call'
    super(
      'lock_lost',
      `${of === 'turn' ? 'Turn' : 'Tool call'} ${toolCallId} (session ${sessionId}): this attempt lost its ${lost.hold ?? 'job lock'} (${reason}). ` +
        `It stopped before its next side effect${of === 'turn' ? ' or model call' : ''} and wrote nothing more; the ${of} goes on in the ` +
        `attempt that takes its job over. If this happens often, find what blocks or pauses this worker for longer than durability.lockMs.`,
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
