/** Which entries `session.log.read()` returns. */
export interface ReadOptions {
  /** Exclusive: entries after this stream id. */
  after?: string
  /** Inclusive: entries from this stream id on (instead of `after`). */
  from?: string
  /** Exclusive: entries before this stream id. */
  before?: string
  /** Only these record types. */
  types?: readonly string[]
  limit?: number
}

/** Options of `session.log.follow()`: resume after a stream id, only some record types, stop on a signal. */
export interface FollowOptions {
  after?: string
  types?: readonly string[]
  signal?: AbortSignal
  /** How long one XREAD BLOCK waits before it checks the signal again. */
  blockMs?: number
}
