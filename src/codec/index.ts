// Encryption at rest (R26): the payload codec contract, the built-in AES-256-GCM codec, and the field
// helpers the storage layer seals and opens stored values with. Imports only errors/ and node builtins.
export {
  ENCRYPTED_TEXT,
  SEALED_MARK,
  isSealed,
  openValue,
  sealValue,
  sealedKeyId,
  type CodecPlace,
  type Envelope,
  type Json,
  type PayloadCodec,
} from './payloadCodec.js'
export { aesGcmCodec, aesGcmKeyIdOf, type AesGcmCodecOptions } from './aesGcm.js'
