import type { Harness } from '../core/index.js'
import { limitStates } from '../limits/slot.js'
import type { RedisClient } from '../log/index.js'

/** One key of one limit as `harness stats` and the dashboard show it (R17). */
export interface LimitStats {
  harness: string
  /** `tool:<name>` or `turns`. */
  limit: string
  /** The key its key function gave ('' for a limit without one). */
  key: string
  running: number
  waiting: number
  /** Starts in the current rate window (0 for a limit without a rate). */
  rateUsed: number
}

/** Running, waiting and rate use per limit and live key of every harness (at most 50 keys a limit: the most recently used). */
export async function limitStats(redis: RedisClient, prefix: string, harnesses: Iterable<Harness>): Promise<LimitStats[]> {
  const perHarness = await Promise.all(
    [...harnesses].map((harness) => {
      const limits = harness.limits
      const all = limits ? [...limits.tools.values(), ...(limits.turns ? [limits.turns] : [])] : []
      return limitStates({ redis, prefix, harness: harness.name }, all)
    }),
  )
  return perHarness.flat().flatMap(({ harness, limit, keys }) => keys.map((k) => ({ harness, limit, ...k })))
}
