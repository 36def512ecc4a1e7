// Reads everything a test left in Redis, to show that no copy of a secret is stored (R6).
import type { RedisClient } from '../../src/index.js'
import { scanKeys } from '../rig.js'

/** Reads every key of the prefix, whatever its type, into one text (key names included). */
export async function dumpPrefix(redis: RedisClient, url: string, prefix: string): Promise<string> {
  const parts: string[] = []
  for (const key of await scanKeys(url, prefix)) {
    parts.push(key)
    const type = await redis.type(key)
    switch (type) {
      case 'string':
        parts.push((await redis.get(key)) ?? '')
        break
      case 'hash':
        parts.push(...Object.entries(await redis.hgetall(key)).flat())
        break
      case 'list':
        parts.push(...(await redis.lrange(key, 0, -1)))
        break
      case 'set':
        parts.push(...(await redis.smembers(key)))
        break
      case 'zset':
        parts.push(...(await redis.zrange(key, '0', '-1', 'WITHSCORES')))
        break
      case 'stream':
        for (const [id, fields] of (await redis.xrange(key, '-', '+')) as Array<[string, string[]]>) parts.push(id, ...fields)
        break
      case 'none':
        break // deleted between SCAN and TYPE
      default:
        throw new Error(`dumpPrefix: key ${key} has type ${type}, which this scan does not read`)
    }
  }
  return parts.join('\n')
}
