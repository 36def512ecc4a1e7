import { InvalidCursorError } from '../errors/index.js'

/** A stream id as XRANGE takes it: `<ms>` or `<ms>-<seq>`. */
const STREAM_ID = /^\d{1,20}(-\d{1,20})?$/
const MAX_ID_PART = 2n ** 64n - 1n
/** The largest id: nothing comes after it (Redis refuses an exclusive range from it). */
export const LAST_ID = `${MAX_ID_PART}-${MAX_ID_PART}`

/**
 * A stream id Redis takes (`<ms>` or `<ms>-<seq>`; with `exact`, only the full form): each part fits in
 * 64 bits, which 20 digits may not, so a read with it cannot fail later with a Redis error.
 */
export function isStreamId(id: unknown, exact = false): id is string {
  if (typeof id !== 'string' || !STREAM_ID.test(id) || (exact && !id.includes('-'))) return false
  return id.split('-').every((part) => BigInt(part) <= MAX_ID_PART)
}

/** The time (ms, Redis's clock) of a stream entry id `<ms>-<seq>`. */
export function streamIdMs(id: string): number {
  return Number(id.split('-')[0])
}

export function assertCursor(option: string, value: unknown): void {
  if (value !== undefined && !isStreamId(value)) throw new InvalidCursorError(option, value)
}
