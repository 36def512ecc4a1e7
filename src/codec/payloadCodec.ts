// The payload codec contract (encryption at rest, R26) and the field helpers the storage layer seals and
// opens stored values with. Sync where the codec is: a Promise only when a user codec returns one.
import { CodecMissingError, ConfigError, NotJsonError } from '../errors/index.js'

/** A JSON value: what a codec encodes and what its decode gives back. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/**
 * Where a value is stored: its session, its record type or store name ('harness.tool.result',
 * 'calls.result', 'job.input' ...) and its field. A codec binds it as additional data, so a ciphertext
 * copied to another session or field does not open.
 */
export interface CodecPlace {
  sessionId: string
  type: string
  field: string
}

/** A sealed value as the codec writes it: one string (its own format; aesGcmCodec's starts with `a1.`). */
export type Envelope = string

/**
 * Encrypts what a user or a model wrote before it is stored, and decrypts it on read (R26).
 * `aesGcmCodec` is the built-in one; a user codec may be async (a KMS envelope: encode and decode
 * return Promises), the storage layer waits for it only then.
 *
 * @example
 * ```ts
 * createHarnessHost({ ..., codec: aesGcmCodec({ keys: { k2: process.env.KEY_2!, k1: process.env.KEY_1! }, current: 'k2' }) })
 * ```
 */
export interface PayloadCodec {
  /** Seals `value` stored at `place`; `place` must be bound (additional data) so the envelope opens only there. */
  encode(value: Json, place: CodecPlace): Envelope | Promise<Envelope>
  /** Opens an envelope `encode` wrote for the same `place`; throws (never guesses) when it cannot. */
  decode(envelope: Envelope, place: CodecPlace): Json | Promise<Json>
  /** The key id an envelope was sealed under, without decrypting it: lets `harness keys` report the key ids in use. */
  keyIdOf?(envelope: Envelope): string | undefined
}

/** The stored form of a sealed field starts with this; the envelope follows. */
export const SEALED_MARK = '\u0000e'

/** What a reader without the key shows in place of a sealed value. */
export const ENCRYPTED_TEXT = '[encrypted]'

// A plain string starting with NUL is stored with one more NUL in front, so a plain value never reads
// as sealed (a stored string starting with NUL NUL is an escaped one, with NUL e a sealed one).
const NUL = '\u0000'
const ESCAPED = '\u0000\u0000'

/** Whether a stored value is a sealed one (`SEALED_MARK` + envelope). */
export function isSealed(stored: unknown): stored is string {
  return typeof stored === 'string' && stored.startsWith(SEALED_MARK)
}

/**
 * The stored form of `value` at `place`. No codec: the value itself (a string starting with NUL
 * escaped). A codec: `SEALED_MARK` + its envelope, a Promise only when the codec's encode is async.
 * `undefined` ("no value") stays `undefined`, never sealed.
 */
export function sealValue(codec: PayloadCodec | undefined, value: unknown, place: CodecPlace): unknown | Promise<string> {
  if (value === undefined) return undefined
  if (codec === undefined) return typeof value === 'string' && value.startsWith(NUL) ? NUL + value : value
  if (!isJson(value))
    throw new NotJsonError(`A value to encrypt (session ${place.sessionId}, ${place.type}.${place.field})`, 'value', notJsonText)
  const envelope = codec.encode(value, place)
  if (typeof envelope === 'string') return SEALED_MARK + envelope
  return Promise.resolve(envelope).then((resolved: unknown) => {
    if (typeof resolved !== 'string') throw badEnvelope(resolved)
    return SEALED_MARK + resolved
  })
}

/**
 * The value a stored one holds: a sealed one opened with `codec` (a Promise only when its decode is
 * async; no codec throws CodecMissingError), an escaped string unescaped, anything else as it is.
 */
export function openValue(codec: PayloadCodec | undefined, stored: unknown, place: CodecPlace): unknown | Promise<unknown> {
  if (typeof stored !== 'string' || !stored.startsWith(NUL)) return stored
  if (stored.startsWith(ESCAPED)) return stored.slice(1)
  if (!stored.startsWith(SEALED_MARK)) return stored // written before codecs, by no encoding of ours
  if (codec === undefined) throw new CodecMissingError(place)
  return codec.decode(stored.slice(SEALED_MARK.length), place)
}

/** The key id a stored sealed value was sealed under (by the codec's keyIdOf), for `harness keys`. */
export function sealedKeyId(codec: PayloadCodec | undefined, stored: unknown): string | undefined {
  if (!isSealed(stored)) return undefined
  return codec?.keyIdOf?.(stored.slice(SEALED_MARK.length))
}

const notJsonText = 'not plain JSON (a Date, Map, class instance, function, bigint, NaN or Infinity, or a cycle)'

function badEnvelope(found: unknown): ConfigError {
  return new ConfigError(
    `The codec's encode must return a string (its envelope), but it returned a ${typeof found}. Fix the codec's encode.`,
  )
}

/**
 * Whether a value is JSON as the log writes it (an `undefined` member is dropped, as JSON.stringify
 * does): a codec must never be given a Date or a Map, whose decode would give back something else.
 */
function isJson(value: unknown, ancestors: Set<object> = new Set()): value is Json {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(value)
    case 'object': {
      if (value === null) return true
      if (ancestors.has(value)) return false
      const proto: unknown = Object.getPrototypeOf(value)
      ancestors.add(value)
      try {
        if (Array.isArray(value)) return proto === Array.prototype && value.every((item) => item === undefined || isJson(item, ancestors))
        if (proto !== Object.prototype && proto !== null) return false
        for (const key in value) {
          const member: unknown = Reflect.get(value, key)
          if (member !== undefined && !isJson(member, ancestors)) return false
        }
        return true
      } finally {
        ancestors.delete(value)
      }
    }
    default:
      return false
  }
}
