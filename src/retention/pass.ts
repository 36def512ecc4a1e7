import { indexKeys, streamIdMs } from '../log/index.js'
import type { RetentionDeps } from './options.js'
import { trimShard } from './trim.js'

/**
 * One retention pass over the sessions index (score: last activity known), oldest first, at most
 * `limit` sessions: a session idle for `sessionMs` with nothing open is exported, then removed in one
 * script that checks again that nothing is open and that its log did not grow since the export. A
 * session that is not due gets its true last activity as its score and is looked at again then.
 * Then the shard's sessions due for trimming are trimmed (trim.ts). Returns the ids of the sessions removed.
 */
export async function retainOnce(deps: RetentionDeps, options: RetainPassOptions = {}): Promise<string[]> {
  const removed: string[] = []
  const shards = options.shards ?? Array.from({ length: deps.shards }, (_, shard) => shard)
  for (const shard of shards) {
    removed.push(...(await retainShard(deps, indexKeys(deps.prefix, shard, deps.shards).sessions, options)))
    await trimShard(deps, shard, options)
  }
  return removed
}

/**
 * One pass's options; `entryTime` maps a log entry's time (Redis's clock, its id) to the host's: the
 * same in production, the test host's manual clock at that moment in a test (src/testing/).
 */
export interface RetainPassOptions {
  limit?: number
  now?: number
  shards?: readonly number[]
  entryTime?: (ms: number) => number
}

async function retainShard(
  deps: RetentionDeps,
  index: string,
  { limit = 100, now = Date.now(), entryTime = (ms: number) => ms }: RetainPassOptions,
): Promise<string[]> {
  const { redis, retention, logger } = deps
  const cutoff = now - retention.sessionMs
  const due = await redis.zrangebyscore(index, '-inf', cutoff, 'LIMIT', 0, limit)
  const removed: string[] = []
  const later = (sessionId: string, at: number) => redis.zadd(index, 'XX', at, sessionId)
  for (const sessionId of due) {
    const log = deps.logFor(sessionId)
    const check = await log.stream.removeSession('check')
    // open work: looked at again one retention period from now
    if (check[0] === 'open') {
      await later(sessionId, now)
      continue
    }
    const lastAt = check[0] === 'idle' && check[1] ? entryTime(streamIdMs(check[1])) : 0
    if (lastAt > cutoff) {
      await later(sessionId, lastAt)
      continue
    }
    const { jsonl, lastId } = await log.stream.exportJsonl()
    try {
      await retention.export(sessionId, jsonl)
    } catch (err) {
      logger.warn({ err, sessionId }, 'retention: the export of a session failed; it is kept and tried again later')
      await later(sessionId, now)
      continue
    }
    // the session's turns leave the turns, tool and tag indexes the check named, in the same write
    const indexes = check[0] === 'idle' ? check.slice(2) : []
    const reply = await log.stream.removeSession('remove', lastId, indexes)
    if (reply[0] === 'removed') {
      // its index entry went in the same write: a prompt that made the session again since is listed
      removed.push(sessionId)
      logger.debug({ sessionId }, 'retention: session exported and removed')
    } else await later(sessionId, now)
  }
  return removed
}
