import type { Redis } from 'ioredis'
import { StorageError } from '../errors.js'
import { indexKeys, sessionKeys } from '../log/keys.js'

/** One session as operators list it. */
export interface SessionSummary {
  sessionId: string
  /** The harness of its latest input ('' when it has none, e.g. runTool only). */
  harness: string
  /** Last input (ms): the sessions index's score. */
  lastActivity: number
  /** Inputs not settled yet (running or in line). */
  openTurns: number
  /** Entries in its log. */
  entries: number
}

export interface SessionsFilter {
  /** At most this many (default 50), most recent first. */
  limit?: number
  /** Only sessions with an open turn. */
  open?: boolean
  /** Only sessions of this harness. */
  harness?: string
}

/**
 * Recent sessions, newest first, from the sessions index (`<prefix>:sessions`, score = last input),
 * each with its harness, open turns and log length (one pipeline per page). Filters skip, never
 * scan more than `limit * 20` sessions.
 */
export async function listSessions(redis: Redis, prefix: string, filter: SessionsFilter = {}): Promise<SessionSummary[]> {
  const limit = filter.limit ?? 50
  const out: SessionSummary[] = []
  const page = Math.max(limit, 50)
  try {
    for (let start = 0; out.length < limit && start < limit * 20; start += page) {
      const ids = await redis.zrevrange(indexKeys(prefix).sessions, start, start + page - 1, 'WITHSCORES')
      if (ids.length === 0) break
      const pipe = redis.pipeline()
      for (let i = 0; i < ids.length; i += 2) {
        const keys = sessionKeys(prefix, ids[i]!)
        pipe.zcard(keys.line).xlen(keys.log).hscan(keys.inputs, '0', 'COUNT', 20)
      }
      const replies = (await pipe.exec()) ?? []
      for (let i = 0; i < ids.length; i += 2) {
        const at = (i / 2) * 3
        const summary: SessionSummary = {
          sessionId: ids[i]!,
          harness: harnessIn((replies[at + 2]?.[1] as [string, string[]] | undefined)?.[1] ?? []),
          lastActivity: Number(ids[i + 1]),
          openTurns: Number(replies[at]?.[1] ?? 0),
          entries: Number(replies[at + 1]?.[1] ?? 0),
        }
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

/**
 * The harness of a session: of any of its inputs (a session's inputs name one harness; an agent tool's
 * child runs in its own session), from its inputs hash. '' for a session with no input (runTool only).
 */
export async function harnessOf(redis: Redis, prefix: string, sessionId: string): Promise<string> {
  const [, fields] = await redis.hscan(sessionKeys(prefix, sessionId).inputs, '0', 'COUNT', 20)
  return harnessIn(fields)
}

/** The harness named by the first input among HSCAN fields (name, value, name, value, ...). */
function harnessIn(fields: string[]): string {
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i]!.startsWith('\0')) continue
    return (JSON.parse(fields[i + 1]!) as { harness?: string }).harness ?? ''
  }
  return ''
}
