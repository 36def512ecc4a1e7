import type { Redis } from 'ioredis'
import { StorageError } from '../errors.js'
import { indexKeys } from '../log/keys.js'
import type { QueueRef } from './queues.js'

const STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'failed', 'completed'] as const

export interface QueueStats {
  harness: string
  kind: 'turns' | 'tools'
  shard: string
  name: string
  counts: Record<(typeof STATES)[number], number>
}

/** What an operator checks first: queue counts per shard, parked calls, open work, recoveries. */
export interface HostStats {
  queues: QueueStats[]
  /** Tool calls waiting without a worker slot (a sleep, a question, an agent child): delayed tool jobs. */
  parkedCalls: number
  openTurns: number
  openCalls: number
  openQuestions: number
  /** Sweeper repairs since the prefix was first used, by reason (`<prefix>:recoveries`). */
  recoveries: Record<string, number>
}

export async function hostStats(redis: Redis, prefix: string, queues: QueueRef[]): Promise<HostStats> {
  const keys = indexKeys(prefix)
  try {
    const [queueStats, [openTurns, openCalls, openQuestions, recoveries]] = await Promise.all([
      Promise.all(
        queues.map(async ({ harness, kind, shard, queue }) => ({
          harness,
          kind,
          shard,
          name: queue.name,
          counts: (await queue.getJobCounts(...STATES)) as QueueStats['counts'],
        })),
      ),
      Promise.all([
        redis.zcard(keys.openTurns),
        redis.zcard(keys.openCalls),
        redis.zcard(keys.openQuestions),
        redis.hgetall(keys.recoveries),
      ]),
    ])
    return {
      queues: queueStats,
      parkedCalls: queueStats.filter((q) => q.kind === 'tools').reduce((sum, q) => sum + q.counts.delayed, 0),
      openTurns,
      openCalls,
      openQuestions,
      recoveries: Object.fromEntries(Object.entries(recoveries).map(([reason, n]) => [reason, Number(n)])),
    }
  } catch (error) {
    throw new StorageError('stats', '(host indexes)', error)
  }
}
