import { fromNanos, toNanos } from '../core/index.js'
import type { ModelUsage } from './usageRecord.js'

/** Spend figures of a group of model call tries (docs/spend.md): counts in TanStack's TokenUsage names, cost in USD. */
export interface UsageFigures {
  /** Model call tries counted (failed and cut ones included). */
  calls: number
  promptTokens: number
  completionTokens: number
  totalTokens: number
  cachedTokens: number
  cacheWriteTokens: number
  reasoningTokens: number
  /** USD: the provider's figures where reported, else priced by the harness's `pricing` (0 for calls neither prices). */
  cost: number
  /** Of `calls`, the tries whose counts are the harness's estimate (the provider reported none). */
  estimatedCalls: number
}

/** The metrics of the totals hash (includes/usage.lua), in the order of a counts argument. */
export const USAGE_METRICS = ['calls', 'in', 'out', 'cached', 'cw', 'reason', 'total', 'cost', 'est'] as const
type Metric = (typeof USAGE_METRICS)[number]
/** The figure each metric of the totals hash sums into. */
const USAGE_FIGURE: Record<Metric, keyof UsageFigures> = {
  calls: 'calls',
  in: 'promptTokens',
  out: 'completionTokens',
  cached: 'cachedTokens',
  cw: 'cacheWriteTokens',
  reason: 'reasoningTokens',
  total: 'totalTokens',
  cost: 'cost',
  est: 'estimatedCalls',
}

/** The figure of a metric read back from a hash field (a Map: the field is data). */
export const FIGURE_OF: ReadonlyMap<string, keyof UsageFigures> = new Map(Object.entries(USAGE_FIGURE))

export const zeroFigures = (): UsageFigures => ({
  calls: 0,
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  cachedTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  cost: 0,
  estimatedCalls: 0,
})

const whole = (n: number | undefined) => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.round(n) : 0)

/** The counts argument of a usage write (includes/usage.lua): one try (or a compaction's `calls`), its tokens and cost. */
export function usageCounts(usage: ModelUsage | undefined, calls = 1): string {
  return [
    calls,
    whole(usage?.promptTokens),
    whole(usage?.completionTokens),
    whole(usage?.cachedTokens),
    whole(usage?.cacheWriteTokens),
    whole(usage?.reasoningTokens),
    whole(usage?.totalTokens),
    whole(usage?.cost === undefined ? 0 : toNanos(usage.cost)),
    usage?.estimated ? calls : 0,
  ].join(' ')
}

/** Session spend by group, as the totals hash holds it. */
export interface UsageGroups {
  total: UsageFigures
  byModel: Record<string, UsageFigures>
  byPrincipal: Record<string, UsageFigures>
  turns: Record<string, UsageFigures>
  /** The session's own spend and every child agent's of its fan-out trees (rolled up as each settled): only where it has one. */
  tree?: UsageFigures
}

/** The figures of a totals hash (HGETALL reply, flat): '<scope>/<metric>/<name>' fields. */
export function groupsOf(fields: Record<string, string>): UsageGroups {
  const total = zeroFigures()
  // the descendants' spend (rollUpUsage.lua), present once a child agent's settled
  let descendants: UsageFigures | undefined
  // Maps, then fromEntries: a model, principal or inputId may be "__proto__"
  const groups = { m: new Map<string, UsageFigures>(), p: new Map<string, UsageFigures>(), i: new Map<string, UsageFigures>() }
  for (const [field, raw] of Object.entries(fields)) {
    const first = field.indexOf('/')
    const second = field.indexOf('/', first + 1)
    if (first < 0 || second < 0) continue
    const scope = field.slice(0, first)
    const metric = field.slice(first + 1, second)
    const name = field.slice(second + 1)
    const key = FIGURE_OF.get(metric)
    if (!key) continue
    let figures: UsageFigures | undefined
    if (scope === 't') figures = total
    else if (scope === 'd') figures = descendants ??= zeroFigures()
    else if (scope === 'm' || scope === 'p' || scope === 'i') {
      const map = groups[scope]
      figures = map.get(name)
      if (!figures) map.set(name, (figures = zeroFigures()))
    }
    if (!figures) continue
    const value = Number(raw)
    figures[key] = key === 'cost' ? fromNanos(value) : value
  }
  return {
    total,
    byModel: Object.fromEntries(groups.m),
    byPrincipal: Object.fromEntries(groups.p),
    turns: Object.fromEntries(groups.i),
    ...(descendants ? { tree: sumFigures(total, descendants) } : {}),
  }
}

function sumFigures(a: UsageFigures, b: UsageFigures): UsageFigures {
  const sum = zeroFigures()
  for (const key of FIGURE_OF.values()) sum[key] = key === 'cost' ? fromNanos(toNanos(a.cost) + toNanos(b.cost)) : a[key] + b[key]
  return sum
}
