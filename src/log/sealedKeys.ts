import { aesGcmKeyIdOf } from '../codec/index.js'
import type { LogStream } from './stream.js'

const PAGE = 1000
// a sealed value in a stored record's JSON: "\u0000e<envelope>" (an envelope needs no JSON escape)
const SEALED_IN_JSON = /"\\u0000e([^"\\]+)"/g

/**
 * The key ids the sealed values of a session's log were sealed under, and how many values each
 * (`harness keys`, docs/encryption.md): the keys a rotation must keep while the session lives. The
 * codec's keyIdOf names them, else an aesGcmCodec envelope's own; '(unknown)' for neither.
 */
export async function sealedKeyIds(stream: LogStream): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  const keyIdOf = stream.codec?.keyIdOf ?? aesGcmKeyIdOf
  for (let from = '-'; ;) {
    const raw = await stream.command('keys', () => stream.redis.xrange(stream.keys.log, from, '+', 'COUNT', PAGE))
    for (const [, fields] of raw)
      for (const match of (fields[1] ?? '').matchAll(SEALED_IN_JSON)) {
        const keyId = keyIdOf(match[1]!) ?? '(unknown)'
        counts[keyId] = (counts[keyId] ?? 0) + 1
      }
    if (raw.length < PAGE) return counts
    from = `(${raw[raw.length - 1]![0]}`
  }
}
