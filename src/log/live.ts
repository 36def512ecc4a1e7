import { sealValue, type CodecPlace, type PayloadCodec } from '../codec/index.js'
import { openOrMask, startsWithNul, type Sealed } from './sealedRecords.js'
import type { RedisClient } from './client.js'
import type { SessionKeys } from './keys.js'

/**
 * The live stream of a session (`<prefix>:{sid}:live`): what followers see while it happens but the
 * log does not keep. Model text deltas as the model writes them (the logged response holds the whole
 * text), and the custom events tools emit. It is capped (about LIVE_MAX_ENTRIES entries) and expires
 * LIVE_TTL_SECONDS after its last write, so its memory per session is bounded; a follower that comes
 * back later gets each message whole from the log instead.
 */
const LIVE_MAX_ENTRIES = 1_000
const LIVE_TTL_SECONDS = 3_600

/** One entry of the live stream, as stored in its `e` field. */
export type LiveEntry =
  /** `text` of message `m` from character `at` on. */
  | { k: 'delta'; m: string; inputId: string; at: number; text: string }
  /** `emitCustomEvent(name, value)` of a tool (`toolCallId`) or of a model-call middleware hook (`inputId`). */
  | { k: 'custom'; toolCallId?: string; inputId?: string; name: string; value: unknown }

export async function appendLive(redis: RedisClient, keys: SessionKeys, entry: LiveEntry): Promise<void> {
  await redis
    .multi()
    .xadd(keys.live, 'MAXLEN', '~', LIVE_MAX_ENTRIES, '*', 'e', JSON.stringify(entry))
    .expire(keys.live, LIVE_TTL_SECONDS)
    .exec()
}

/** Parses a live entry; null for one of another shape (a newer version's), which followers skip. */
export function parseLive(fields: string[]): LiveEntry | null {
  try {
    const entry = JSON.parse(fields[1] ?? '') as LiveEntry
    return entry && (entry.k === 'delta' || entry.k === 'custom') ? entry : null
  } catch {
    return null
  }
}

/** Where a live entry's content is bound: its kind, and its text (a delta) or value (a custom event). */
const livePlace = (sessionId: string, entry: LiveEntry): CodecPlace => ({
  sessionId,
  type: `live.${entry.k}`,
  field: entry.k === 'delta' ? 'text' : 'value',
})

/** A live entry whose content starts with NUL: escaped even without a codec (sealedRecords.ts). */
export const liveNeedsEscape = (entry: LiveEntry): boolean => startsWithNul(entry.k === 'delta' ? entry.text : entry.value)

/** A live entry's content (a delta's text, a custom event's value) sealed by the codec (docs/encryption.md); as is without one. */
export async function sealLive(codec: PayloadCodec | undefined, sessionId: string, entry: LiveEntry): Promise<LiveEntry> {
  const place = livePlace(sessionId, entry)
  if (entry.k === 'delta') return { ...entry, text: String(await sealValue(codec, entry.text, place)) }
  return { ...entry, value: await sealValue(codec, entry.value, place) }
}

/** A live entry as it was written: its sealed content opened (a follower's read); `mask`: one it cannot open reads as [encrypted]. */
export async function openLive(
  codec: PayloadCodec | undefined,
  sessionId: string,
  entry: LiveEntry,
  sealed: Sealed = 'throw',
): Promise<LiveEntry> {
  const place = livePlace(sessionId, entry)
  if (entry.k === 'delta')
    return startsWithNul(entry.text) ? { ...entry, text: String(await openOrMask(codec, entry.text, place, sealed)) } : entry
  return startsWithNul(entry.value) ? { ...entry, value: await openOrMask(codec, entry.value, place, sealed) } : entry
}
