import { ConfigError } from '../errors/index.js'

/**
 * Shards: a session belongs to shard `shardOf(sessionId, shards)`; each shard's keys (its sessions,
 * its open-work indexes, its BullMQ queues, its wake-up channel) share one hash tag, so everything one
 * operation writes lies in one Redis Cluster slot, and the shards spread over the masters.
 */

const MAX_SHARDS = 1024
const SLOTS = 16384

/** CRC16-XMODEM, the hash Redis Cluster maps keys to slots with. */
function crc16(text: string): number {
  let crc = 0
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc
}

/** The Cluster slot of a hash tag's content. */
function tagSlot(tag: string): number {
  return crc16(tag) % SLOTS
}

/** FNV-1a 32-bit: a stable hash of a session id (the same in every process and version). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash
}

export function assertShards(shards: unknown): asserts shards is number {
  if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS)
    throw new ConfigError(`shards must be a whole number from 1 to ${MAX_SHARDS}, not ${JSON.stringify(shards)}.`)
}

/** The shard count when none is given: DH_SHARDS, else 1. */
export function defaultShards(): number {
  const raw = process.env.DH_SHARDS
  if (raw === undefined || raw === '') return 1
  const shards = Number(raw)
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS)
    throw new ConfigError(`DH_SHARDS must be a whole number from 1 to ${MAX_SHARDS}, not ${JSON.stringify(raw)}.`)
  return shards
}

/** The shard of a session: a stable hash of its id. */
export function shardOf(sessionId: string, shards: number): number {
  return shards === 1 ? 0 : fnv1a(sessionId) % shards
}

const tags = new Map<string, string>()

/**
 * The hash tag of shard `shard` of `shards`: `s<shard>`, or `s<shard>.<k>` with the smallest k whose
 * slot lies in the middle half of the shard's equal part of the slot range. A cluster made by
 * `redis-cli --cluster create` gives each master an equal run of slots, so `shards` = a multiple of
 * the masters puts the same number of shards on each.
 */
export function shardTag(shard: number, shards: number): string {
  const id = `${shard}/${shards}`
  let tag = tags.get(id)
  if (tag === undefined) {
    // the search below ends only for a real shard: anything else would spin forever
    assertShards(shards)
    if (!Number.isInteger(shard) || shard < 0 || shard >= shards)
      throw new ConfigError(`shard ${JSON.stringify(shard)} does not exist (shards are 0 to ${shards - 1}).`)
    const width = SLOTS / shards
    const lo = shard * width + width / 4
    const hi = shard * width + (3 * width) / 4
    for (let k = 0; ; k++) {
      const candidate = k === 0 ? `s${shard}` : `s${shard}.${k}`
      const slot = tagSlot(candidate)
      if (shards === 1 || (slot >= lo && slot < hi)) {
        tag = candidate
        break
      }
    }
    tags.set(id, tag)
  }
  return tag
}
