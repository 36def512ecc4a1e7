import { createHash } from 'node:crypto'
import { InvalidEventAddressError } from '../errors/index.js'

/**
 * What a machine event is addressed to: its name and its correlation key (an order id, a PR number),
 * and, for a session-scoped wait (`scope: 'session'`), the one session whose waits it is for.
 */
export interface EventAddress {
  event: string
  key: string
  /** A scoped address: only this session's scoped waits take its events (docs/decisions/session-scoped-events.md). */
  sessionId?: string
}

/** Longest event name and key: they are hashed into one key name, and shown in records and errors. */
export const MAX_EVENT_ADDRESS_LENGTH = 1_000

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Throws InvalidEventAddressError (naming `where` and the part) unless the value can be an event name or key. */
export function assertEventAddressPart(where: string, part: 'event name' | 'key', value: unknown): asserts value is string {
  if (typeof value !== 'string') throw new InvalidEventAddressError(where, part, `is missing (got ${typeof value}, not a string)`)
  if (value.length === 0) throw new InvalidEventAddressError(where, part, 'is empty')
  if (value.length > MAX_EVENT_ADDRESS_LENGTH)
    throw new InvalidEventAddressError(where, part, `is ${value.length.toLocaleString('en-US')} characters long (at most 1,000)`)
  // UTF-8 turns every lone surrogate into U+FFFD: two such names would hash to one address
  if (LONE_SURROGATE.test(value)) throw new InvalidEventAddressError(where, part, 'has a lone UTF-16 surrogate')
}

/**
 * The text an address is hashed from, one-to-one. An unscoped pair without a NUL keeps the form older
 * versions wrote (`event\0key`: one NUL, so it splits one way only), so a wait registered before this
 * encoding is still found. A pair with a NUL is length-prefixed (`<event length>\0<event>\0<key>`:
 * at least two NULs, a digit first), and a scoped one starts `s\0<session id>\0` and is length-prefixed
 * too (at least four NULs, a letter first): no two addresses of the three forms share a text.
 */
function addressText({ event, key, sessionId }: EventAddress): string {
  if (sessionId !== undefined) return `s\0${sessionId}\0${event.length}\0${event}\0${key}`
  if (!event.includes('\0') && !key.includes('\0')) return `${event}\0${key}`
  return `${event.length}\0${event}\0${key}`
}

/** The address's id: 20 hex digits of the sha256 of its text, the hash tag of its Redis hash (EventWaits.keyOf). */
export function eventAddressId(address: EventAddress): string {
  return createHash('sha256').update(addressText(address)).digest('hex').slice(0, 20)
}
