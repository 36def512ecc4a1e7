// The payload codec core (encryption at rest, R26): aesGcmCodec's round trip, place binding, tamper
// detection and key rotation; its option checks; and the field helpers sealValue / openValue.
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  ENCRYPTED_TEXT,
  SEALED_MARK,
  aesGcmCodec,
  isSealed,
  openValue,
  sealValue,
  sealedKeyId,
  type CodecPlace,
  type Json,
  type PayloadCodec,
} from '../../src/codec/index.js'
import { CodecDecodeError, CodecKeyMissingError, CodecMissingError, ConfigError, NotJsonError } from '../../src/errors/index.js'

const K1 = randomBytes(32)
const K2 = randomBytes(32).toString('base64')
const place: CodecPlace = { sessionId: 's-1', type: 'harness.tool.result', field: 'result' }

const VALUES: Json[] = [
  null,
  true,
  false,
  0,
  -1.5,
  1e300,
  '',
  'plain',
  'ünïcødé 你好 🎉',
  '\u0000',
  '\u0000e looks sealed',
  '\u0000\u0000 looks escaped',
  [],
  [1, 'two', null, [3]],
  {},
  { nested: { deep: [{ a: 1 }, { b: 'x' }], empty: {} }, text: 'line\nbreak' },
]

/** Flips one bit of the envelope's part `index` (1: key id ... 4: tag), keeping it base64url. */
function tamper(envelope: string, index: number): string {
  const parts = envelope.split('.')
  const bytes = Buffer.from(parts[index]!, 'base64url')
  bytes[0]! ^= 1
  parts[index] = bytes.toString('base64url')
  return parts.join('.')
}

/** The codec's functions behind Promises: a KMS-like user codec. */
function asyncCodec(inner: PayloadCodec): PayloadCodec {
  return {
    encode: async (value, at) => inner.encode(value, at),
    decode: async (envelope, at) => inner.decode(envelope, at),
    keyIdOf: (envelope) => inner.keyIdOf?.(envelope),
  }
}

describe('aesGcmCodec', () => {
  const codec = aesGcmCodec({ keys: { k1: K1 }, current: 'k1' })

  it('round-trips JSON values (unicode, NUL-leading strings, nested objects, numbers, null, arrays)', () => {
    for (const value of VALUES) expect(codec.decode(codec.encode(value, place) as string, place)).toEqual(value)
  })

  it('writes a1.<keyId>.<iv>.<ciphertext>.<tag> with a fresh IV each time', () => {
    const first = codec.encode('same', place) as string
    const second = codec.encode('same', place) as string
    expect(first).toMatch(/^a1\.k1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)
    expect(first).not.toEqual(second)
    expect(first.split('.')[2]).not.toEqual(second.split('.')[2])
    expect(codec.keyIdOf!(first)).toBe('k1')
  })

  it('R26 the envelope holds no plaintext', () => {
    const envelope = codec.encode({ secretish: 'the user wrote this' }, place) as string
    expect(envelope).not.toContain('the user wrote this')
    expect(Buffer.from(envelope.split('.')[3]!, 'base64url').toString('utf8')).not.toContain('the user wrote')
  })

  it('R26 binds the place: another session, type or field does not open it', () => {
    const envelope = codec.encode('bound', place) as string
    for (const other of [
      { ...place, sessionId: 's-2' },
      { ...place, type: 'calls.result' },
      { ...place, field: 'input' },
    ]) {
      expect(() => codec.decode(envelope, other)).toThrow(CodecDecodeError)
    }
    const error = catchError(() => codec.decode(envelope, { ...place, sessionId: 's-2' }))
    expect(error).toBeInstanceOf(CodecDecodeError)
    expect(error).toMatchObject({ code: 'codec_decode_failed', keyId: 'k1' })
    expect(error.message).toContain('Session s-2: harness.tool.result.result')
    expect(error.message).not.toContain('bound')
    expect(error.message).not.toContain(envelope.split('.')[3])
  })

  it('R26 tampered IV, ciphertext or tag throws CodecDecodeError, never a value', () => {
    const envelope = codec.encode({ a: 'b' }, place) as string
    for (const index of [2, 3, 4]) expect(() => codec.decode(tamper(envelope, index), place)).toThrow(CodecDecodeError)
    const otherBytes = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })
    expect(() => otherBytes.decode(envelope, place)).toThrow(/fails authentication/)
  })

  it('a malformed envelope throws CodecDecodeError', () => {
    const envelope = codec.encode(1, place) as string
    const parts = envelope.split('.')
    for (const bad of [
      '',
      'nonsense',
      envelope.slice(0, -1) + '!',
      ['a2', ...parts.slice(1)].join('.'),
      parts.slice(0, 4).join('.'),
      [...parts.slice(0, 2), 'AAAA', ...parts.slice(3)].join('.'),
      [parts[0], 'k/1', ...parts.slice(2)].join('.'),
    ]) {
      expect(() => codec.decode(bad, place)).toThrow(CodecDecodeError)
      expect(codec.keyIdOf!(bad)).toBeUndefined()
    }
  })

  it('R26 rotation: {k1,k2} current k2 opens k1 values and seals new ones under k2', () => {
    const old = aesGcmCodec({ keys: { k1: K1 }, current: 'k1' })
    const rotated = aesGcmCodec({ keys: { k1: K1, k2: K2 }, current: 'k2' })
    const written = old.encode({ before: 'rotation' }, place) as string
    expect(rotated.decode(written, place)).toEqual({ before: 'rotation' })
    const fresh = rotated.encode('after', place) as string
    expect(rotated.keyIdOf!(fresh)).toBe('k2')
    expect(rotated.keyIdOf!(written)).toBe('k1')
    expect(() => old.decode(fresh, place)).toThrow(CodecKeyMissingError)
  })

  it('R26 a codec lacking the key id throws CodecKeyMissingError naming it', () => {
    const written = aesGcmCodec({ keys: { k1: K1 }, current: 'k1' }).encode('x', place) as string
    const error = catchError(() => aesGcmCodec({ keys: { k2: K2 }, current: 'k2' }).decode(written, place))
    expect(error).toBeInstanceOf(CodecKeyMissingError)
    expect(error).toMatchObject({ code: 'codec_key_missing', keyId: 'k1' })
    expect(error.message).toContain('"k1"')
    expect(error.message).toContain('aesGcmCodec({ keys })')
  })

  it('accepts base64url keys and key ids with dots', () => {
    const dotted = aesGcmCodec({ keys: { 'key.2025-06': K1.toString('base64url') }, current: 'key.2025-06' })
    const envelope = dotted.encode([1], place) as string
    expect(dotted.keyIdOf!(envelope)).toBe('key.2025-06')
    expect(dotted.decode(envelope, place)).toEqual([1])
    expect(aesGcmCodec({ keys: { 'key.2025-06': K1 }, current: 'key.2025-06' }).decode(envelope, place)).toEqual([1])
  })

  it('refuses bad options with a ConfigError naming the field, never the key material', () => {
    const short = randomBytes(16).toString('base64')
    const cases: [unknown, RegExp][] = [
      [{ keys: { k1: K1 }, current: 'k2' }, /current must be the id of one of keys \("k1"\), got "k2"/],
      [
        { keys: { k1: short }, current: 'k1' },
        /keys\["k1"\] must be 32 bytes \(AES-256\), got 16; generate one with openssl rand -base64 32/,
      ],
      [{ keys: { k1: randomBytes(16) }, current: 'k1' }, /keys\["k1"\] must be 32 bytes/],
      [{ keys: { k1: 'not base64!' }, current: 'k1' }, /keys\["k1"\] is a string but not base64/],
      [{ keys: { 'a.b/c': K1 }, current: 'a.b/c' }, /key id "a.b\/c" must be 1 to 64/],
      [{ keys: { '': K1 }, current: '' }, /key id "" must be 1 to 64/],
      [{ keys: {}, current: 'k1' }, /keys is empty/],
      [{ current: 'k1' }, /keys must be an object/],
    ]
    for (const [options, message] of cases) {
      const error = catchError(() => aesGcmCodec(options as never))
      expect(error).toBeInstanceOf(ConfigError)
      expect(error.message).toMatch(message)
      expect(error.message).not.toContain(short)
      expect(error.message).not.toContain(K2)
    }
  })
})

describe('sealValue / openValue', () => {
  const codec = aesGcmCodec({ keys: { k1: K1 }, current: 'k1' })

  it('without a codec passes plain values through, escaping a NUL-leading string', () => {
    for (const value of [null, 1, 'text', { a: [1] }, ['x']]) {
      expect(sealValue(undefined, value, place)).toBe(value)
      expect(openValue(undefined, value, place)).toBe(value)
    }
    for (const value of ['\u0000', '\u0000e not sealed', '\u0000\u0000x']) {
      const stored = sealValue(undefined, value, place)
      expect(stored).toBe('\u0000' + value)
      expect(isSealed(stored)).toBe(false)
      expect(openValue(undefined, stored, place)).toBe(value)
      expect(openValue(codec, stored, place)).toBe(value)
    }
    expect(sealValue(undefined, undefined, place)).toBeUndefined()
    expect(sealValue(codec, undefined, place)).toBeUndefined()
  })

  it('R26 with a codec stores SEALED_MARK + envelope, and opens it back', () => {
    for (const value of VALUES) {
      const stored = sealValue(codec, value, place)
      expect(isSealed(stored)).toBe(true)
      expect((stored as string).startsWith(SEALED_MARK + 'a1.k1.')).toBe(true)
      expect(sealedKeyId(codec, stored)).toBe('k1')
      expect(openValue(codec, stored, place)).toEqual(value)
    }
    expect(sealedKeyId(codec, 'plain')).toBeUndefined()
    expect(sealedKeyId(undefined, sealValue(codec, 'x', place))).toBeUndefined()
  })

  it('R26 a sealed value without a codec throws CodecMissingError', () => {
    const stored = sealValue(codec, 'hidden', place)
    const error = catchError(() => openValue(undefined, stored, place))
    expect(error).toBeInstanceOf(CodecMissingError)
    expect(error).toMatchObject({ code: 'codec_missing' })
    expect(error.message).toContain('Session s-1: harness.tool.result.result is encrypted')
    expect(error.message).toContain('createHarnessHost({ codec })')
    expect(ENCRYPTED_TEXT).toBe('[encrypted]')
  })

  it('a value that is not JSON is refused before the codec sees it', () => {
    expect(() => sealValue(codec, { at: new Date() }, place)).toThrow(NotJsonError)
    expect(() => sealValue(codec, [Number.NaN], place)).toThrow(NotJsonError)
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    expect(() => sealValue(codec, cyclic, place)).toThrow(NotJsonError)
    expect(openValue(codec, sealValue(codec, { kept: 1, dropped: undefined }, place), place)).toEqual({ kept: 1 })
  })

  it('R26 an async codec works through sealValue / openValue', async () => {
    const kms = asyncCodec(codec)
    const pending = sealValue(kms, { a: 'ü' }, place)
    expect(pending).toBeInstanceOf(Promise)
    const stored = await pending
    expect(isSealed(stored)).toBe(true)
    expect(codec.decode((stored as string).slice(SEALED_MARK.length), place)).toEqual({ a: 'ü' })
    expect(await openValue(kms, stored, place)).toEqual({ a: 'ü' })
    await expect(openValue(kms, stored, { ...place, field: 'other' })).rejects.toBeInstanceOf(CodecDecodeError)
    expect(sealedKeyId(kms, stored)).toBe('k1')
    const broken: PayloadCodec = { encode: async () => 42 as never, decode: () => null }
    await expect(sealValue(broken, 'x', place)).rejects.toBeInstanceOf(ConfigError)
  })
})

function catchError(run: () => unknown): Error {
  try {
    run()
  } catch (error) {
    if (error instanceof Error) return error
    throw new Error(`threw a non-Error: ${String(error)}`, { cause: error })
  }
  throw new Error('expected it to throw')
}
