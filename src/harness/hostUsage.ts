import { InvalidTurnFilterError, UnknownHarnessError } from '../errors/index.js'
import { fromNanos } from '../core/index.js'
import { FIGURE_OF, usageDay, usageDayKey, zeroFigures, type RedisClient, type UsageFigures } from '../log/index.js'

/** `host.usage(filter)`: which spend to sum; every field narrows it. */
export interface UsageFilter {
  harness?: string
  principal?: string
  model?: string
  /** ms or a Date; its UTC day is the first one summed. Default: 30 days before `until`. */
  since?: number | Date
  /** ms or a Date; its UTC day is the last one summed. Default: now. */
  until?: number | Date
}

/** The spend `host.usage` found: in all, by UTC day (YYYY-MM-DD), by model and by principal. */
export interface HostUsage {
  total: UsageFigures
  byDay: Record<string, UsageFigures>
  byModel: Record<string, UsageFigures>
  byPrincipal: Record<string, UsageFigures>
}

const DAY_MS = 86_400_000
const MAX_DAYS = 366

/**
 * Sums the day hashes of the harnesses (keys.ts usageDayKey: one a harness, shard and UTC day,
 * written with each model call try's record), pipelined: O(days × shards × harnesses) keys, never
 * the sessions. Costs are summed in nano-USD.
 */
export async function hostUsage(
  redis: RedisClient,
  prefix: string,
  shards: number,
  harnesses: string[],
  filter: UsageFilter = {},
): Promise<HostUsage> {
  const time = (value: number | Date | undefined, name: string, fallback: number) => {
    const ms = value === undefined ? fallback : value instanceof Date ? value.getTime() : value
    if (typeof ms !== 'number' || !Number.isFinite(ms))
      throw new InvalidTurnFilterError(name, value, 'host.usage takes a time in ms or a Date')
    return ms
  }
  const until = time(filter.until, 'until', Date.now())
  const since = time(filter.since, 'since', until - 30 * DAY_MS)
  const first = Date.parse(usageDay(since))
  const days: string[] = []
  for (let at = first; at <= until; at += DAY_MS) days.push(usageDay(at))
  if (days.length === 0 || days.length > MAX_DAYS)
    throw new InvalidTurnFilterError(
      'since',
      filter.since,
      `host.usage sums 1 to ${MAX_DAYS} days: since must be before until, at most ${MAX_DAYS} days apart`,
    )
  if (filter.harness !== undefined && !harnesses.includes(filter.harness)) throw new UnknownHarnessError(filter.harness)
  const names = filter.harness !== undefined ? [filter.harness] : harnesses
  const keys: Array<{ day: string; key: string }> = []
  // one pipeline a shard: a shard's keys share its hash tag, so each pipeline stays in one Cluster slot
  const pipelines: Array<Promise<Array<[Error | null, unknown]>>> = []
  for (let shard = 0; shard < shards; shard++) {
    const pipeline = redis.pipeline()
    for (const name of names)
      for (const day of days) {
        const key = usageDayKey(prefix, shard, shards, name, day)
        keys.push({ day, key })
        pipeline.hgetall(key)
      }
    pipelines.push(pipeline.exec().then((replies) => replies ?? []))
  }
  const replies = (await Promise.all(pipelines)).flat()
  const nanos = new Map<UsageFigures, number>()
  const add = (into: UsageFigures, metric: keyof UsageFigures, value: number) => {
    if (metric === 'cost') {
      const sum = (nanos.get(into) ?? 0) + value
      nanos.set(into, sum)
      into.cost = fromNanos(sum)
    } else into[metric] += value
  }
  const total = zeroFigures()
  const groups = {
    day: new Map<string, UsageFigures>(),
    model: new Map<string, UsageFigures>(),
    principal: new Map<string, UsageFigures>(),
  }
  const group = (map: Map<string, UsageFigures>, name: string) => map.get(name) ?? map.set(name, zeroFigures()).get(name)!
  keys.forEach(({ day }, i) => {
    const [error, fields] = replies[i] ?? []
    if (error) throw error
    for (const [field, raw] of Object.entries((fields ?? {}) as Record<string, string>)) {
      // '<metric>/<model length>/<model><principal>'
      const [metric, length] = field.split('/', 2)
      const figure = FIGURE_OF.get(metric ?? '')
      if (!figure || length === undefined) continue
      const rest = field.slice(metric!.length + length.length + 2)
      const model = rest.slice(0, Number(length))
      const principal = rest.slice(Number(length))
      if ((filter.model !== undefined && model !== filter.model) || (filter.principal !== undefined && principal !== filter.principal))
        continue
      const value = Number(raw)
      add(total, figure, value)
      add(group(groups.day, day), figure, value)
      if (model) add(group(groups.model, model), figure, value)
      if (principal) add(group(groups.principal, principal), figure, value)
    }
  })
  return {
    total,
    byDay: Object.fromEntries(groups.day),
    byModel: Object.fromEntries(groups.model),
    byPrincipal: Object.fromEntries(groups.principal),
  }
}

/** The columns `harness usage` and the dashboard's Usage page show of a group's figures, in order. */
export const USAGE_COLUMNS = ['Calls', 'Input', 'Output', 'Cached', 'Cache write', 'Reasoning', 'Cost (USD)', 'Estimated'] as const

/** A group's figures as the cells of USAGE_COLUMNS. */
export function usageCells(f: UsageFigures): string[] {
  const counts = [f.calls, f.promptTokens, f.completionTokens, f.cachedTokens, f.cacheWriteTokens, f.reasoningTokens]
  return [...counts.map((n) => n.toLocaleString('en-US')), f.cost.toFixed(4), f.estimatedCalls.toLocaleString('en-US')]
}

/** The order groups are shown in: the costliest first, then the most tokens. */
export const costliestFirst = ([, a]: [string, UsageFigures], [, b]: [string, UsageFigures]) =>
  b.cost - a.cost || b.totalTokens - a.totalTokens
