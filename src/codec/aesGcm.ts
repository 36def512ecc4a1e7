// The built-in payload codec: AES-256-GCM of node:crypto, one fresh IV a value, the value's place bound
// as additional data, several keys by id so a key can be rotated (new values under `current`, old ones
// still open under their own key id).
import { createCipheriv, createDecipheriv, createSecretKey, randomFillSync, type KeyObject } from 'node:crypto'
import { CodecDecodeError, CodecKeyMissingError, ConfigError, NotJsonError } from '../errors/index.js'
import type { CodecPlace, Envelope, Json, PayloadCodec } from './payloadCodec.js'

/** Options of {@link aesGcmCodec}. */
export interface AesGcmCodecOptions {
  /**
   * Every key by its id (1 to 64 of `[A-Za-z0-9._-]`): 32 bytes, or base64 (or base64url) text of 32
   * bytes (`openssl rand -base64 32`). Keep an old key after a rotation while stored values use it.
   */
  keys: Record<string, Uint8Array | string>
  /** The id of the key new values are sealed under; one of `keys`. */
  current: string
}

const VERSION = 'a1'
const ALGORITHM = 'aes-256-gcm'
const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/
const BASE64URL = /^[A-Za-z0-9_-]+$/
const BASE64_TEXT = /^[A-Za-z0-9+/_-]+={0,2}$/
const GENERATE = 'generate one with openssl rand -base64 32'

/**
 * The built-in codec for encryption at rest (R26): AES-256-GCM with a fresh 12-byte IV a value and
 * the value's place (session, type, field) as additional data, so an envelope does not open anywhere
 * else. Its envelope is `a1.<keyId>.<iv>.<ciphertext>.<tag>` (base64url parts). Rotation: add a new
 * key and make it `current`; values sealed under an old key id still open while that key is in `keys`.
 *
 * @example
 * ```ts
 * const codec = aesGcmCodec({ keys: { k1: process.env.DH_KEY_1!, k2: process.env.DH_KEY_2! }, current: 'k2' })
 * const host = createHarnessHost({ redis, harnesses: [harness], codec })
 * ```
 */
export function aesGcmCodec(options: AesGcmCodecOptions): PayloadCodec {
  const { keys, current } = checkedOptions(options)
  const currentKey = keys.get(current)
  if (currentKey === undefined) throw new ConfigError(`aesGcmCodec: current ${JSON.stringify(current)} is not one of keys`)
  return {
    encode(value: Json, place: CodecPlace): Envelope {
      const text = JSON.stringify(value)
      if (typeof text !== 'string') throw new NotJsonError('aesGcmCodec.encode: the value', 'value', `a ${typeof value}`)
      const iv = freshIv()
      const cipher = createCipheriv(ALGORITHM, currentKey, iv, { authTagLength: TAG_BYTES })
      cipher.setAAD(additionalData(place))
      const ciphertext = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
      const tag = cipher.getAuthTag()
      return `${VERSION}.${current}.${iv.toString('base64url')}.${ciphertext.toString('base64url')}.${tag.toString('base64url')}`
    },

    decode(envelope: Envelope, place: CodecPlace): Json {
      const parsed = parseEnvelope(envelope)
      if (typeof parsed === 'string') throw new CodecDecodeError(place, undefined, parsed)
      const key = keys.get(parsed.keyId)
      if (key === undefined) throw new CodecKeyMissingError(parsed.keyId, place)
      let text: string
      try {
        const decipher = createDecipheriv(ALGORITHM, key, parsed.iv, { authTagLength: TAG_BYTES })
        decipher.setAAD(additionalData(place))
        decipher.setAuthTag(parsed.tag)
        text = Buffer.concat([decipher.update(parsed.ciphertext), decipher.final()]).toString('utf8')
      } catch {
        // the crypto error says only "unable to authenticate data"; ours names the place and the key id
        throw new CodecDecodeError(place, parsed.keyId, 'it fails authentication (altered, copied from another place, or other key bytes)')
      }
      try {
        const value: Json = JSON.parse(text)
        return value
      } catch {
        throw new CodecDecodeError(place, parsed.keyId, 'its plaintext is not JSON (it was not written by aesGcmCodec)')
      }
    },

    keyIdOf: aesGcmKeyIdOf,
  }
}

// IVs are cut from a pool the CSPRNG fills 512 at a time: one random fill a value was the codec's largest cost
const IV_POOL = Buffer.alloc(IV_BYTES * 512)
let ivAt = IV_POOL.length

/** A fresh random 12-byte IV (each pool byte is used once). */
function freshIv(): Buffer {
  if (ivAt === IV_POOL.length) {
    randomFillSync(IV_POOL)
    ivAt = 0
  }
  const iv = Buffer.from(IV_POOL.subarray(ivAt, ivAt + IV_BYTES))
  ivAt += IV_BYTES
  return iv
}

/** The key id of an aesGcmCodec envelope (no key needed: it is in the envelope), else undefined. */
export function aesGcmKeyIdOf(envelope: Envelope): string | undefined {
  const parsed = parseEnvelope(envelope)
  return typeof parsed === 'string' ? undefined : parsed.keyId
}

/** The place as additional data: a JSON array, so two different places never give the same bytes. */
function additionalData(place: CodecPlace): Buffer {
  return Buffer.from(JSON.stringify([place.sessionId, place.type, place.field]), 'utf8')
}

interface ParsedEnvelope {
  keyId: string
  iv: Buffer
  ciphertext: Buffer
  tag: Buffer
}

/**
 * The parts of an `a1` envelope, or why it is none. A key id may hold dots, so the version is cut
 * from the front and the three base64url parts (which never hold one) from the back.
 */
function parseEnvelope(envelope: unknown): ParsedEnvelope | string {
  if (typeof envelope !== 'string') return `it is a ${typeof envelope}, not an envelope`
  const parts = envelope.split('.')
  if (parts.length < 5)
    return `it is no aesGcmCodec envelope (${parts.length} dot-separated parts, expected version.keyId.iv.ciphertext.tag)`
  if (parts[0] !== VERSION) return `its envelope version is not ${VERSION} (written by another codec or a newer version)`
  const keyId = parts.slice(1, -3).join('.')
  if (!KEY_ID.test(keyId)) return 'its key id is malformed'
  const [iv, ciphertext, tag] = parts.slice(-3).map(base64urlBytes)
  if (iv === undefined || ciphertext === undefined || tag === undefined) return 'a part of it is not base64url'
  if (iv.length !== IV_BYTES) return `its IV is ${iv.length} bytes, not ${IV_BYTES}`
  if (tag.length !== TAG_BYTES) return `its tag is ${tag.length} bytes, not ${TAG_BYTES}`
  return { keyId, iv, ciphertext, tag }
}

/** The bytes of canonical base64url text (no other text gives them: an envelope has one spelling), else undefined. */
function base64urlBytes(text: string): Buffer | undefined {
  if (!BASE64URL.test(text)) return undefined
  const bytes = Buffer.from(text, 'base64url')
  return bytes.toString('base64url') === text ? bytes : undefined
}

/** The options checked, each key as a KeyObject (made once: encode and decode only look it up). */
function checkedOptions(options: unknown): { keys: Map<string, KeyObject>; current: string } {
  if (!isRecord(options)) throw new ConfigError('aesGcmCodec: pass options { keys: { [keyId]: key }, current: keyId }')
  const { keys, current } = options
  if (!isRecord(keys)) throw new ConfigError(`aesGcmCodec: keys must be an object of key id to key, e.g. { k1: '<base64>' }; ${GENERATE}`)
  const entries = Object.entries(keys)
  if (entries.length === 0) throw new ConfigError(`aesGcmCodec: keys is empty; give at least one key, e.g. { k1: '<base64>' }; ${GENERATE}`)
  const checked = new Map<string, KeyObject>()
  for (const [keyId, key] of entries) {
    if (!KEY_ID.test(keyId))
      throw new ConfigError(`aesGcmCodec: key id ${quoted(keyId)} must be 1 to 64 of A-Z a-z 0-9 . _ - (e.g. "k1", "2025-06")`)
    checked.set(keyId, createSecretKey(keyBytes(keyId, key)))
  }
  if (typeof current !== 'string' || !checked.has(current))
    throw new ConfigError(
      `aesGcmCodec: current must be the id of one of keys (${[...checked.keys()].map((id) => JSON.stringify(id)).join(', ')}), ` +
        `got ${typeof current === 'string' ? quoted(current) : `a ${typeof current}`}`,
    )
  return { keys: checked, current }
}

/** A key's 32 bytes, copied (a caller's buffer may change later); the message never holds key material. */
function keyBytes(keyId: string, key: unknown): Buffer {
  const field = `keys[${JSON.stringify(keyId)}]`
  let bytes: Buffer
  if (key instanceof Uint8Array) bytes = Buffer.from(key)
  else if (typeof key === 'string') {
    const text = key.trim()
    if (!BASE64_TEXT.test(text))
      throw new ConfigError(`aesGcmCodec: ${field} is a string but not base64 or base64url text of 32 bytes; ${GENERATE}`)
    bytes = Buffer.from(text, 'base64')
  } else
    throw new ConfigError(`aesGcmCodec: ${field} must be 32 bytes (a Uint8Array) or their base64 text, got a ${typeof key}; ${GENERATE}`)
  if (bytes.length !== KEY_BYTES)
    throw new ConfigError(`aesGcmCodec: ${field} must be ${KEY_BYTES} bytes (AES-256), got ${bytes.length}; ${GENERATE}`)
  return bytes
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A caller's id for a message, cut short: JSON-quoted so an empty or odd one shows. */
function quoted(text: string): string {
  return JSON.stringify(text.length > 70 ? `${text.slice(0, 70)}…` : text)
}
