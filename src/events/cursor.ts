import { InvalidCursorError } from '../errors/index.js'
import { isStreamId } from '../log/index.js'

/**
 * Where a follower of a session's events stands: its positions in the log and the live stream, the
 * live message it is in the middle of (and how many characters of it it has), and how many events
 * of the next entry it already has (one entry can make several events). Opaque to callers; safe as
 * an SSE `id:` and in a URL.
 */
export interface Cursor {
  log: string
  live: string
  /** The open live message ('' for none) and the characters of it already delivered. */
  message: string
  emitted: number
  skip: number
}

const START: Cursor = { log: '0-0', live: '0-0', message: '', emitted: 0, skip: 0 }

const isLogId = (id: string | undefined) => isStreamId(id, true)
const MESSAGE = /^[A-Za-z0-9._-]{0,240}$/

export function encodeCursor(c: Cursor): string {
  return [c.log, c.live, c.message, c.emitted, c.skip].join('~')
}

export function decodeCursor(text: string | undefined): Cursor {
  if (text === undefined) return START
  const [log, live, message, emitted, skip, ...rest] = typeof text === 'string' ? text.split('~') : []
  const ok =
    rest.length === 0 &&
    isLogId(log) &&
    isLogId(live) &&
    MESSAGE.test(message ?? '') &&
    /^\d{1,9}$/.test(emitted ?? '') &&
    /^\d{1,4}$/.test(skip ?? '')
  if (!ok) throw new InvalidCursorError('events({ from })', text)
  return { log: log!, live: live!, message: message!, emitted: Number(emitted), skip: Number(skip) }
}

/**
 * A cursor right before a log entry: reading from it starts with that entry (and the live entries
 * from the millisecond before it on, which a follower orders before it).
 */
export function cursorBefore(entryId: string): Cursor {
  const [ms, seq] = entryId.split('-').map(BigInt)
  const previous = seq > 0n ? `${ms}-${seq - 1n}` : ms > 0n ? `${ms - 1n}-18446744073709551615` : '0-0'
  return { ...START, log: previous, live: ms > 0n ? `${ms - 1n}-0` : '0-0' }
}
