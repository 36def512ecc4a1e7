import type { RedisClient } from '../log/client.js'
import { turnIndexKey, turnTagIndexKey, turnToolIndexKey, TURN_STATUSES, type TurnStatus } from '../log/keys.js'

/**
 * What drives a page of host.turns: the status indexes (score: when a turn entered its status), or the
 * tool index of the filter's tool, or the tag index of one of its tags (`tag:<key>`; score: when the
 * turn was prompted). Every other part of the filter is checked on each turn the driving indexes yield.
 */
export type Plan = 'status' | 'tool' | `tag:${string}`

/** One sorted set a page reads: a (harness, shard) index of the plan (and of a status, for 'status'). */
export interface Source {
  harness: string
  /** The status every turn of it is in ('status' plan); a tool or tag index holds turns of every status. */
  status?: TurnStatus
  key: string
  /** Where the last page stopped in it: the last (score, member) consumed; null: nothing consumed yet. */
  after: [number, string] | null
  done: boolean
  items: Array<[string, number]>
}

/** The filter's parts a plan needs (turns.ts TurnsFilter). */
export interface PlanFilter {
  status?: TurnStatus
  harness?: string
  tool?: string
  metadata?: Record<string, string>
}

/** The plans a filter allows: the status indexes always, the tool index with a tool, a tag index per tag. */
export function plansOf(filter: PlanFilter): Plan[] {
  return [
    'status',
    ...(filter.tool !== undefined ? (['tool'] as const) : []),
    ...Object.keys(filter.metadata ?? {}).map((key) => `tag:${key}` as const),
  ]
}

/** The (harness[, status], shard) indexes a plan reads, in a fixed order (the cursor names them by key). */
export function sourcesOf(plan: Plan, prefix: string, shards: number, harnesses: readonly string[], filter: PlanFilter): Source[] {
  const sources: Source[] = []
  const source = (harness: string, key: string, status?: TurnStatus) =>
    sources.push({ harness, key, after: null, done: false, items: [], ...(status ? { status } : {}) })
  for (const harness of filter.harness !== undefined ? [filter.harness] : harnesses)
    for (let shard = 0; shard < shards; shard++) {
      if (plan === 'status')
        for (const status of filter.status !== undefined ? [filter.status] : TURN_STATUSES)
          source(harness, turnIndexKey(prefix, shard, shards, harness, status), status)
      else if (plan === 'tool') source(harness, turnToolIndexKey(prefix, shard, shards, harness, filter.tool!))
      else {
        const key = plan.slice('tag:'.length)
        source(harness, turnTagIndexKey(prefix, shard, shards, harness, key, filter.metadata![key]!))
      }
    }
  return sources
}

/**
 * The plan with the fewest candidates: for the status indexes, the turns in the time window (ZCOUNT
 * over [since, until]); for a tool or tag index, its turns prompted by `until` (a turn enters its
 * status at or after it was prompted). O(indexes × log n); a filter of status, harness and time alone
 * has one plan and asks nothing. Ties go to the status indexes (their order is the status time).
 */
export async function choosePlan(
  redis: RedisClient,
  prefix: string,
  shards: number,
  harnesses: readonly string[],
  filter: PlanFilter,
  [min, max]: [string, string],
): Promise<Plan> {
  const plans = plansOf(filter)
  if (plans.length === 1) return 'status'
  const counts = await Promise.all(
    plans.map(async (plan) => {
      const keys = sourcesOf(plan, prefix, shards, harnesses, filter).map((s) => s.key)
      const each = await Promise.all(keys.map((key) => redis.zcount(key, plan === 'status' ? min : '-inf', max)))
      return each.reduce((sum, n) => sum + n, 0)
    }),
  )
  let best = 0
  for (let i = 1; i < plans.length; i++) if (counts[i]! < counts[best]!) best = i
  return plans[best]!
}
