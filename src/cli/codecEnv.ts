import { aesGcmCodec, type PayloadCodec } from '../codec/index.js'
import { ConfigError } from '../errors/index.js'

/**
 * The codec a process gets from its environment (docs/encryption.md), for workers, the CLI and the
 * dashboard alike: DH_CODEC_KEYS, comma-separated `<keyId>:<base64 of 32 bytes>`, and DH_CODEC_CURRENT,
 * the key new values are sealed with (default: the last listed). Undefined when DH_CODEC_KEYS is unset.
 * A module that exports `codec` (a codec of its own: a KMS envelope) takes precedence.
 */
export function codecFromEnv(env: NodeJS.ProcessEnv = process.env): PayloadCodec | undefined {
  const raw = env.DH_CODEC_KEYS
  if (raw === undefined || raw.trim() === '') return undefined
  const keys: Record<string, string> = {}
  for (const part of raw.split(',')) {
    const at = part.indexOf(':')
    if (at <= 0)
      throw new ConfigError('DH_CODEC_KEYS must be comma-separated <keyId>:<base64 key> pairs (e.g. k1:$(openssl rand -base64 32)).')
    keys[part.slice(0, at).trim()] = part.slice(at + 1).trim()
  }
  const ids = Object.keys(keys)
  return aesGcmCodec({ keys, current: env.DH_CODEC_CURRENT?.trim() || ids[ids.length - 1]! })
}

/** True for what a module may export as its `codec`: an object with encode and decode. */
export function isCodec(value: unknown): value is PayloadCodec {
  return (
    typeof value === 'object' &&
    value !== null &&
    'encode' in value &&
    'decode' in value &&
    typeof value.encode === 'function' &&
    typeof value.decode === 'function'
  )
}
