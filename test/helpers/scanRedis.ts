import type { RedisClient } from '../../src/index.js'

/**
 * Every value stored under `prefix` (streams, hashes, lists, sets, sorted sets, strings), as
 * `key → text`, so a test can look for what must not be there in plain text (R26).
 */
export async function scanPrefix(redis: RedisClient, prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000)
    cursor = next
    for (const key of keys) out.set(key, await valueText(redis, key))
  } while (cursor !== '0')
  return out
}

async function valueText(redis: RedisClient, key: string): Promise<string> {
  switch (await redis.type(key)) {
    case 'string':
      return (await redis.get(key)) ?? ''
    case 'hash':
      return JSON.stringify(await redis.hgetall(key))
    case 'list':
      return JSON.stringify(await redis.lrange(key, 0, -1))
    case 'set':
      return JSON.stringify(await redis.smembers(key))
    case 'zset':
      return JSON.stringify(await redis.zrange(key, '0', '-1'))
    case 'stream':
      return JSON.stringify(await redis.xrange(key, '-', '+'))
    default:
      return ''
  }
}

/** The canaries found in the values, with the keys that hold each. */
export function findCanaries(values: Map<string, string>, pattern: RegExp): Map<string, string[]> {
  const found = new Map<string, string[]>()
  for (const [key, text] of values) for (const match of text.matchAll(pattern)) found.set(match[0], [...(found.get(match[0]) ?? []), key])
  return found
}
