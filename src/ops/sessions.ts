import { StorageError } from '../errors/index.js'
import type { RedisClient } from '../log/client.js'
import { indexKeys, sessionKeys } from '../log/keys.js'

/** One session as operators list it. */
export interface SessionSummary {
  sessionId: string
  /** The harness of its inputs ('' when it has none, e.g. runTool only). */
  harness: string
  /** Last input (ms): the sessions index's score. */
  lastActivity: number
  /** Inputs not settled yet (running or in line). */
  openTurns: number
  /** Entries in its log. */
  entries: number
}

/** Which sessions `host.sessions()` lists. */
export interface SessionsFilter {
  /** At most this many (default 50), most recent first. */
  limit?: number
  /** Only sessions with an open turn. */
  open?: boolean
  /** Only sessions of this harness. */
  harness?: string
}

interface ShardCursor {
  key: string
  next: number
  items: Array<[string, number]>
  done: boolean
}

/**
 * Recent sessions, newest first: the shards' sessions indexes (`<prefix>:{S}:sessions`, score = last
 * input) merged by score, each session with its harness, open turns and log length. Filters skip;
 * at most `limit * 20` sessions are looked at.
 */
export async function listSessions(
  redis: RedisClient,
  prefix: string,
  shards: number,
  filter: SessionsFilter = {},
): Promise<SessionSummary[]> {
  const limit = filter.limit ?? 50
  const page = Math.max(limit, 50)
  const cursors: ShardCursor[] = Array.from({ length: shards }, (_, shard) => ({
    key: indexKeys(prefix, shard, shards).sessions,
    next: 0,
    items: [],
    done: false,
  }))
  const refill = async (c: ShardCursor) => {
    const flat = await redis.zrevrange(c.key, c.next, c.next + page - 1, 'WITHSCORES')
    c.next += page
    if (flat.length === 0) c.done = true
    for (let i = 0; i < flat.length; i += 2) c.items.push([flat[i]!, Number(flat[i + 1])])
  }
  const out: SessionSummary[] = []
  try {
    for (let seen = 0; out.length < limit && seen < limit * 20;) {
      const batch: Array<[string, number]> = []
      while (batch.length < page) {
        await Promise.all(cursors.filter((c) => c.items.length === 0 && !c.done).map(refill))
        const newest = cursors.reduce<ShardCursor | undefined>(
          (best, c) => (c.items[0] && (!best || c.items[0][1] > best.items[0]![1]) ? c : best),
          undefined,
        )
        if (!newest) break
        batch.push(newest.items.shift()!)
      }
      if (batch.length === 0) break
      seen += batch.length
      for (const summary of await Promise.all(batch.map(([id, at]) => summarize(redis, prefix, shards, id, at)))) {
        if (filter.open && summary.openTurns === 0) continue
        if (filter.harness !== undefined && summary.harness !== filter.harness) continue
        if (out.length < limit) out.push(summary)
      }
    }
  } catch (error) {
    throw new StorageError('list sessions', '(sessions index)', error)
  }
  return out
}

async function summarize(
  redis: RedisClient,
  prefix: string,
  shards: number,
  sessionId: string,
  lastActivity: number,
): Promise<SessionSummary> {
  const keys = sessionKeys(prefix, sessionId, shards)
  const [openTurns, entries, [, fields]] = await Promise.all([
    redis.zcard(keys.line),
    redis.xlen(keys.log),
    redis.hscan(keys.inputs, '0', 'COUNT', 20),
  ])
  return { sessionId, harness: harnessIn(fields), lastActivity, openTurns, entries }
}

/**
 * The harness of a session: of any of its inputs (a session's inputs name one harness; an agent tool's
 * child runs in its own session), from its inputs hash. '' for a session with no input (runTool only).
 */
export async function harnessOf(redis: RedisClient, prefix: string, shards: number, sessionId: string): Promise<string> {
  const [, fields] = await redis.hscan(sessionKeys(prefix, sessionId, shards).inputs, '0', 'COUNT', 20)
  return harnessIn(fields)
}

/** The harness named by the first input among HSCAN fields (name, value, name, value, ...). */
function harnessIn(fields: string[]): string {
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i]!.startsWith('\0')) continue
    const input: unknown = JSON.parse(fields[i + 1]!)
    return typeof input === 'object' && input !== null && 'harness' in input && typeof input.harness === 'string' ? input.harness : ''
  }
  return ''
}
