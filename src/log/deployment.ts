import type { RedisClient } from './client.js'
import { shardCountKey } from './keys.js'

/**
 * The deployment's shard count under `prefix`: the first host to ask writes its own (`SET NX`), every
 * later one reads the stored count back to compare. Null only if the key was removed in between.
 */
export async function claimShardCount(redis: RedisClient, prefix: string, shards: number): Promise<number | null> {
  const key = shardCountKey(prefix)
  if ((await redis.set(key, String(shards), 'NX')) === 'OK') return shards
  const stored = await redis.get(key)
  return stored === null ? null : Number(stored)
}
