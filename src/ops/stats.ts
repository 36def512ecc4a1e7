import { StorageError } from '../errors/index.js'
import type { RedisClient } from '../log/client.js'
import { indexKeys } from '../log/keys.js'
import type { QueueRef } from './queues.js'
import type { Harness } from '../core/index.js'
import { limitStats, type LimitStats } from './limitStats.js'

const STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'failed', 'completed'] as const

/** Job counts of one queue of a harness on one shard (`host.stats()`). */
export interface QueueStats {
  harness: string
  kind: 'turns' | 'tools'
  shard: number
  name: string
  counts: Record<(typeof STATES)[number], number>
}

/** What an operator checks first: queue counts per shard, parked calls, open work, recoveries. */
export interface HostStats {
  queues: QueueStats[]
  /**
   * Tool calls waiting without a worker slot (a sleep, a question, an event, an agent child): delayed
   * tool jobs, and the runTool calls that wait for an event without a job (the shards' event timers).
   */
  parkedCalls: number
  openTurns: number
  openCalls: number
  openQuestions: number
  /** Sweeper repairs since the prefix was first used, by reason (`<prefix>:{S}:recoveries`, summed over shards). */
  recoveries: Record<string, number>
  /** Per limit (defineHarness `limits`) and key: running, waiting, starts in the rate window (R17). */
  limits: LimitStats[]
}

export async function hostStats(
  redis: RedisClient,
  prefix: string,
  shards: number,
  queues: QueueRef[],
  harnesses: Iterable<Harness> = [],
): Promise<HostStats> {
  try {
    const [queueStats, perShard, limits] = await Promise.all([
      Promise.all(
        queues.map(async ({ harness, kind, shard, queue }) => ({
          harness,
          kind,
          shard,
          name: queue.name,
          counts: countsOf(await queue.getJobCounts(...STATES)),
        })),
      ),
      Promise.all(
        Array.from({ length: shards }, (_, shard) => {
          const keys = indexKeys(prefix, shard, shards)
          return Promise.all([
            redis.zcard(keys.openTurns),
            redis.zcard(keys.openCalls),
            redis.zcard(keys.openQuestions),
            redis.hgetall(keys.recoveries),
            redis.zcard(keys.eventTimers),
          ])
        }),
      ),
      limitStats(redis, prefix, harnesses),
    ])
    const recoveries: Record<string, number> = {}
    for (const [, , , byReason] of perShard)
      for (const [reason, n] of Object.entries(byReason)) recoveries[reason] = (recoveries[reason] ?? 0) + Number(n)
    const sum = (i: 0 | 1 | 2 | 4) => perShard.reduce((total, counts) => total + counts[i], 0)
    return {
      queues: queueStats,
      // a runTool call's event wait parks without its job (its timer enqueues it): counted from its timer
      parkedCalls: queueStats.filter((q) => q.kind === 'tools').reduce((total, q) => total + q.counts.delayed, 0) + sum(4),
      openTurns: sum(0),
      openCalls: sum(1),
      openQuestions: sum(2),
      recoveries,
      limits,
    }
  } catch (error) {
    throw new StorageError('stats', '(host indexes)', error)
  }
}

/** BullMQ's counts (a map by state name) as one number for each of STATES: a state it left out counts 0. */
function countsOf(counts: Record<string, number | undefined>): QueueStats['counts'] {
  const of = (state: (typeof STATES)[number]) => counts[state] ?? 0
  return {
    waiting: of('waiting'),
    active: of('active'),
    delayed: of('delayed'),
    prioritized: of('prioritized'),
    'waiting-children': of('waiting-children'),
    failed: of('failed'),
    completed: of('completed'),
  }
}
