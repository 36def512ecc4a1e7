import { z } from 'zod'
import { InvalidTurnFilterError, StorageError } from '../errors/index.js'
import type { RedisClient } from '../log/client.js'
import { sessionKeys, turnIndexKey, TURN_STATUSES, type TurnStatus } from '../log/keys.js'
import type { InputState } from '../log/inputState.js'
import { shardOf } from '../log/shards.js'
import { choosePlan, plansOf, sourcesOf, type Plan, type Source } from './turnsPlan.js'

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
  /** Only turns prompted with all of these tags (`prompt(text, { metadata })`): read from a tag index (docs/operations.md). */
  metadata?: Record<string, string>
  /** Only turns in which the model called this tool: read from the tool index. */
  tool?: string
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
  /** A child agent's turn (docs/fan-out.md): the call that started it, and its place in its tree (the root's session and call, its depth). */
  parent?: { sessionId: string; toolCallId: string; tree?: { sessionId: string; root: string; depth: number } }
}

/** A page of turns, newest first; `cursor` (absent on the last page) gives the next. */
export interface TurnsPage {
  items: TurnSummary[]
  cursor?: string
}

const MAX_LIMIT = 1_000
/** The most index entries one page looks at when the other parts of the filter drop some (the page then ends early, with a cursor). */
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
  const { metadata, tool } = filter
  if (metadata !== undefined && (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)))
    throw new InvalidTurnFilterError('metadata', metadata, 'an object of string tags')
  for (const [key, value] of Object.entries(metadata ?? {}))
    if (typeof value !== 'string') throw new InvalidTurnFilterError(`metadata.${key}`, value, "a tag's value is a string")
  if (tool !== undefined && (typeof tool !== 'string' || tool === '')) throw new InvalidTurnFilterError('tool', tool, 'the name of a tool')
  return { limit, min: toMs('since', filter.since) ?? -Infinity, max: toMs('until', filter.until) ?? Infinity }
}

/** The cursor: the plan of the first page, and for each of its sources (by key) the last (score, member) consumed, or 'done'. */
interface CursorState {
  plan: Plan
  at: Record<string, [number, string] | 'done'>
}

const cursorSchema = z.object({
  plan: z.string(),
  at: z.record(z.string(), z.union([z.tuple([z.number(), z.string()]), z.literal('done')])),
})

function decodeCursor(cursor: string | undefined, filter: TurnsFilter): CursorState | undefined {
  if (cursor === undefined) return undefined
  try {
    const state = cursorSchema.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')))
    const plan = state.success ? plansOf(filter).find((p) => p === state.data.plan) : undefined
    if (state.success && plan !== undefined) return { plan, at: state.data.at }
  } catch {
    // reported below
  }
  throw new InvalidTurnFilterError('cursor', cursor, 'pass the cursor of a page host.turns returned, unchanged, with the same filter')
}

/**
 * Turns from the indexes of one plan (turnsPlan.ts: the status indexes, or the tool or a tag index,
 * whichever holds the fewest candidates), newest first: every (harness[, status], shard) index of the
 * plan is paged by score from where the cursor left it and the pages are merged, so a page costs
 * O(indexes × limit), whatever the number of sessions. The filter's other parts are checked on each
 * turn the indexes yield, from its input (it costs what it skips; at most SCAN_FACTOR × limit a page).
 */
export async function listTurns(
  redis: RedisClient,
  prefix: string,
  shards: number,
  harnesses: readonly string[],
  filter: TurnsFilter = {},
): Promise<TurnsPage> {
  const { limit, min, max } = checkFilter(filter, harnesses)
  const position = decodeCursor(filter.cursor, filter)
  const items: TurnSummary[] = []
  let plan: Plan
  let sources: Source[]
  try {
    plan = position?.plan ?? (await choosePlan(redis, prefix, shards, harnesses, filter, [score(min), score(max)]))
    sources = sourcesOf(plan, prefix, shards, harnesses, filter)
    for (const source of sources) {
      const at = position?.at[source.key]
      source.after = at === 'done' ? null : (at ?? null)
      source.done = at === 'done'
    }
    // a tool or tag index is scored by prompt time, which is at most the status time: nothing below `since` is ruled out
    const floor = plan === 'status' ? min : -Infinity
    for (let scanned = 0; items.length < limit && scanned < limit * SCAN_FACTOR;) {
      await Promise.all(sources.filter((s) => !s.done && s.items.length === 0).map((s) => refill(redis, s, limit, floor, max)))
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
      const summaries = await Promise.all(batch.map(([source, member, at]) => summarize(redis, prefix, shards, source, member, at)))
      for (const summary of summaries) if (summary && matches(summary, filter, min, max)) items.push(summary.turn)
    }
  } catch (error) {
    if (error instanceof InvalidTurnFilterError) throw error
    throw new StorageError('list turns', '(turns index)', error)
  }
  if (sources.every((s) => s.done && s.items.length === 0)) return { items }
  const next: CursorState = { plan, at: {} }
  for (const s of sources) {
    if (s.done && s.items.length === 0) next.at[s.key] = 'done'
    else if (s.after) next.at[s.key] = s.after
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

/**
 * A turn an index yielded, with its input. From a tool or tag index (no status of its own) its status
 * is the input's, and its time its score in that status's index (one ZSCORE).
 */
async function summarize(
  redis: RedisClient,
  prefix: string,
  shards: number,
  source: Source,
  member: string,
  score: number,
): Promise<{ turn: TurnSummary; input: InputState } | null> {
  const bar = member.lastIndexOf('|')
  const sessionId = member.slice(0, bar)
  const inputId = member.slice(bar + 1)
  const raw = await redis.hget(sessionKeys(prefix, sessionId, shards).inputs, inputId)
  if (!raw) return null // removed between the index read and this one
  const input = JSON.parse(raw) as InputState
  const status = source.status ?? (input.status === 'open' ? 'open' : input.outcome)
  if (!status) return null // settled before inputs kept their outcome: in no tool or tag index
  let at = score
  if (!source.status) {
    const entered = await redis.zscore(turnIndexKey(prefix, shardOf(sessionId, shards), shards, source.harness, status), member)
    if (entered === null) return null // its status changed between the reads: the next query sees it
    at = Number(entered)
  }
  const turn: TurnSummary = {
    sessionId,
    inputId,
    harness: source.harness,
    status,
    at,
    text: input.text.slice(0, 200),
    ...(input.metadata ? { metadata: input.metadata } : {}),
    ...(input.principal !== undefined ? { principal: input.principal } : {}),
    ...(input.parent ? { parent: parentOf(input.parent) } : {}),
  }
  return { turn, input }
}

/** The parts of the filter the plan's indexes did not answer: status and time (tool or tag plans), tags, tool. */
function matches({ turn, input }: { turn: TurnSummary; input: InputState }, filter: TurnsFilter, min: number, max: number): boolean {
  if (filter.status !== undefined && turn.status !== filter.status) return false
  if (turn.at < min || turn.at > max) return false
  if (filter.tool !== undefined && !input.tools?.includes(filter.tool)) return false
  return !filter.metadata || Object.entries(filter.metadata).every(([k, v]) => input.metadata?.[k] === v)
}

/** A child turn's parent, as host.turns lists it: its ids and tree, not its harness. */
function parentOf(parent: NonNullable<InputState['parent']>): NonNullable<TurnSummary['parent']> {
  const { sessionId, toolCallId, tree } = parent
  return { sessionId, toolCallId, ...(tree ? { tree } : {}) }
}
