// Errors of encryption at rest (src/codec/): a sealed value whose key, codec or bytes are not there.
// No message carries key material, ciphertext or plaintext: only the place and the key id.
import { DurableHarnessError } from './base.js'

/** Where a sealed value is stored (the codec's `CodecPlace`): named in every message, so an operator finds it. */
export interface SealedPlace {
  readonly sessionId: string
  readonly type: string
  readonly field: string
}

function where(place: SealedPlace): string {
  return `Session ${place.sessionId}: ${place.type}.${place.field}`
}

/**
 * A sealed value names a key id its codec does not have: a key was dropped after a rotation, or this
 * process was started with other keys than the writer. Nothing is read; add the key back.
 */
export class CodecKeyMissingError extends DurableHarnessError {
  constructor(
    /** The key id the value was sealed under. */
    readonly keyId: string,
    readonly place: SealedPlace,
  ) {
    super(
      'codec_key_missing',
      `${where(place)} is encrypted under key id ${JSON.stringify(keyId)}, which this codec does not have. ` +
        `Add that key to aesGcmCodec({ keys }) (or your codec): after a rotation keep the old keys next to the new current one ` +
        `for as long as stored values use them.`,
    )
  }
}

/**
 * A sealed value fails to open: it was altered, copied from another session or field (its place is
 * bound as additional data), its key id holds other bytes than the key that wrote it, or it is no
 * envelope of this codec. Its content is never guessed nor skipped.
 */
export class CodecDecodeError extends DurableHarnessError {
  constructor(
    readonly place: SealedPlace,
    /** The envelope's key id, when it could be read. */
    readonly keyId: string | undefined,
    reason: string,
  ) {
    super(
      'codec_decode_failed',
      `${where(place)} cannot be decrypted${keyId === undefined ? '' : ` under key id ${JSON.stringify(keyId)}`}: ${reason}. ` +
        `Nothing of it was read. Check that each key id holds the same bytes as when the value was written; ` +
        `a value altered in Redis or copied from another session or field cannot be opened.`,
    )
  }
}

/** A sealed value read by a process that has no codec: it cannot show what a user or a model wrote. */
export class CodecMissingError extends DurableHarnessError {
  constructor(readonly place: SealedPlace) {
    super(
      'codec_missing',
      `${where(place)} is encrypted and this process has no codec; pass createHarnessHost({ codec }) ` +
        `(a worker or the CLI: export codec from the harness module, or set DH_CODEC_KEYS) with the codec and keys the writer used.`,
    )
  }
}
