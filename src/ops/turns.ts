import { InvalidTurnFilterError, StorageError } from '../errors.js'
import type { RedisClient } from '../log/client.js'
import { sessionKeys, turnIndexKey, TURN_STATUSES, type TurnStatus } from '../log/keys.js'
import type { InputState } from '../log/inputs.js'

/** Which turns `host.turns()` lists (and `host.replay` / `host.cancel` act on). */
export interface TurnsFilter {
  /** Only turns in this status (default: every status). 'open': running, in line or paused. */
  status?: TurnStatus
  /** Only turns of this harness (default: every harness of the host). */
  harness?: string
  /** Only turns that entered their status at or after this time (ms since the epoch, or a Date). */
  since?: number | Date
  /** ... and at or before this time. */
  until?: number | Date
  /** Only turns prompted with all of these tags (`prompt(text, { metadata })`), checked on each turn the index yields. */
  metadata?: Record<string, string>
  /** From where the last page stopped (its `cursor`). */
  cursor?: string
  /** At most this many a page (default 50, at most 1,000). */
  limit?: number
}

/** One turn as operators list it. */
export interface TurnSummary {
  sessionId: string
  inputId: string
  harness: string
  status: TurnStatus
  /** When it entered its status (ms): prompted, reopened, or settled. */
  at: number
  /** The prompt's text, cut to 200 characters. */
  text: string
  metadata?: Record<string, string>
  /** Who prompted, when the prompt named one. */
  principal?: string
}

/** A page of turns, newest first; `cursor` (absent on the last page) gives the next. */
export interface TurnsPage {
  items: TurnSummary[]
  cursor?: string
}

/** One sorted set the query pages: a (harness, status, shard) turns index. */
interface Source {
  harness: string
  status: TurnStatus
  key: string
  /** Where the last page stopped in it: the last (score, member) consumed; null: nothing consumed yet. */
  after: [number, string] | null
  done: boolean
  items: Array<[string, number]>
}

const MAX_LIMIT = 1_000
/** The most index entries one page looks at when a metadata filter drops some (the page then ends early, with a cursor). */
const SCAN_FACTOR = 20

function toMs(option: string, value: number | Date | undefined): number | undefined {
  if (value === undefined) return undefined
  const ms = value instanceof Date ? value.getTime() : value
  if (typeof ms !== 'number' || !Number.isFinite(ms)) throw new InvalidTurnFilterError(option, value, 'pass a time in ms or a Date')
  return ms
}

function checkFilter(filter: TurnsFilter, harnesses: readonly string[]) {
  const { status, harness, limit = 50 } = filter
  if (status !== undefined && !TURN_STATUSES.includes(status))
    throw new InvalidTurnFilterError('status', status, `use one of ${TURN_STATUSES.join(', ')}`)
  if (harness !== undefined && !harnesses.includes(harness))
    throw new InvalidTurnFilterError('harness', harness, `this host runs ${harnesses.join(', ') || 'no harness'}`)
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new InvalidTurnFilterError('limit', limit, `an integer from 1 to ${MAX_LIMIT}`)
  if (filter.metadata !== undefined && (typeof filter.metadata !== 'object' || filter.metadata === null))
    throw new InvalidTurnFilterError('metadata', filter.metadata, 'an object of string tags')
  return { limit, min: toMs('since', filter.since) ?? -Infinity, max: toMs('until', filter.until) ?? Infinity }
}

/** The cursor: for each source (by its key), the last (score, member) consumed, or 'done'. */
type CursorState = Record<string, [number, string] | 'done'>

function decodeCursor(cursor: string | undefined): CursorState {
  if (cursor === undefined) return {}
  try {
    const state = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown
    if (typeof state === 'object' && state !== null && !Array.isArray(state)) return state as CursorState
  } catch {
    // reported below
  }
  throw new InvalidTurnFilterError('cursor', cursor, 'pass the cursor of a page host.turns returned, unchanged')
}

/**
 * Turns from the turns indexes (keys.ts turnIndexKey), newest first: every (harness, status, shard)
 * index the filter names is paged by score from where the cursor left it and the pages are merged,
 * so a page costs O(indexes × limit), whatever the number of sessions. A metadata filter is checked
 * on each turn the indexes yield (it costs what it skips; at most SCAN_FACTOR × limit a page).
 */
export async function listTurns(
  redis: RedisClient,
  prefix: string,
  shards: number,
  harnesses: readonly string[],
  filter: TurnsFilter = {},
): Promise<TurnsPage> {
  const { limit, min, max } = checkFilter(filter, harnesses)
  const position = decodeCursor(filter.cursor)
  const sources: Source[] = []
  for (const harness of filter.harness !== undefined ? [filter.harness] : harnesses)
    for (const status of filter.status !== undefined ? [filter.status] : TURN_STATUSES)
      for (let shard = 0; shard < shards; shard++) {
        const key = turnIndexKey(prefix, shard, shards, harness, status)
        const at = position[key]
        sources.push({ harness, status, key, after: at === 'done' ? null : (at ?? null), done: at === 'done', items: [] })
      }
  const items: TurnSummary[] = []
  try {
    for (let scanned = 0; items.length < limit && scanned < limit * SCAN_FACTOR;) {
      await Promise.all(sources.filter((s) => !s.done && s.items.length === 0).map((s) => refill(redis, s, limit, min, max)))
      const batch: Array<[Source, string, number]> = []
      while (batch.length < limit - items.length) {
        const newest = sources.reduce<Source | undefined>(
          (best, s) => (s.items[0] && (!best || newer(s.items[0], best.items[0]!)) ? s : best),
          undefined,
        )
        if (!newest) break
        const [member, score] = newest.items.shift()!
        newest.after = [score, member]
        batch.push([newest, member, score])
        if (newest.items.length === 0 && !newest.done) break // refill it before merging on
      }
      if (batch.length === 0) break
      scanned += batch.length
      const summaries = await Promise.all(batch.map(([source, member, score]) => summarize(redis, prefix, shards, source, member, score)))
      for (const summary of summaries) if (summary && matches(summary, filter.metadata)) items.push(summary)
    }
  } catch (error) {
    if (error instanceof InvalidTurnFilterError) throw error
    throw new StorageError('list turns', '(turns index)', error)
  }
  if (sources.every((s) => s.done && s.items.length === 0)) return { items }
  const next: CursorState = {}
  for (const s of sources) {
    if (s.done && s.items.length === 0) next[s.key] = 'done'
    else if (s.after) next[s.key] = s.after
  }
  return { items, cursor: Buffer.from(JSON.stringify(next)).toString('base64url') }
}

/** Newest first; equal scores by member, descending (ZREVRANGEBYSCORE's order). */
function newer([am, as]: [string, number], [bm, bs]: [string, number]): boolean {
  return as !== bs ? as > bs : am > bm
}

/** The next entries of a source below its position, within [min, max]. Equal-score entries already consumed are skipped. */
async function refill(redis: RedisClient, source: Source, limit: number, min: number, max: number): Promise<void> {
  const top = source.after ? Math.min(source.after[0], max) : max
  for (let extra = 0; ; extra += limit) {
    const flat = await redis.zrevrangebyscore(source.key, score(top), score(min), 'WITHSCORES', 'LIMIT', 0, limit + extra)
    const all: Array<[string, number]> = []
    for (let i = 0; i < flat.length; i += 2) all.push([flat[i]!, Number(flat[i + 1])])
    const after = source.after
    const fresh = after ? all.filter(([m, s]) => s < after[0] || (s === after[0] && m < after[1])) : all
    // every entry fetched was a tie already consumed, and there may be more: fetch further
    if (fresh.length === 0 && all.length === limit + extra) continue
    source.items = fresh
    if (all.length < limit + extra) source.done = true
    return
  }
}

function score(ms: number): string {
  return ms === Infinity ? '+inf' : ms === -Infinity ? '-inf' : String(ms)
}

async function summarize(
  redis: RedisClient,
  prefix: string,
  shards: number,
  source: Source,
  member: string,
  at: number,
): Promise<TurnSummary | null> {
  const bar = member.lastIndexOf('|')
  const sessionId = member.slice(0, bar)
  const inputId = member.slice(bar + 1)
  const raw = await redis.hget(sessionKeys(prefix, sessionId, shards).inputs, inputId)
  if (!raw) return null // removed between the index read and this one
  const input = JSON.parse(raw) as InputState
  return {
    sessionId,
    inputId,
    harness: source.harness,
    status: source.status,
    at,
    text: input.text.slice(0, 200),
    ...(input.metadata ? { metadata: input.metadata } : {}),
    ...(input.principal !== undefined ? { principal: input.principal } : {}),
  }
}

function matches(turn: TurnSummary, metadata: Record<string, string> | undefined): boolean {
  return !metadata || Object.entries(metadata).every(([k, v]) => turn.metadata?.[k] === v)
}
