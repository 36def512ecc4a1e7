import type { Queue } from 'bullmq'
import type { Harness } from '../core/index.js'
import type { HarnessQueues } from '../queue/index.js'

/** One BullMQ queue of a host, named for operators (stats, metrics, the dashboard's queue views). */
export interface QueueRef {
  harness: string
  kind: 'turns' | 'tools'
  /** The shard whose queues it is (0 to shards - 1). */
  shard: number
  queue: Queue
}

/** Every queue of a host's harnesses, per shard: the one list stats, metrics and the dashboard read. */
export function hostQueues(harnesses: Iterable<Harness>, queuesOf: (harness: Harness) => HarnessQueues): QueueRef[] {
  return [...harnesses].flatMap((harness) => {
    const q = queuesOf(harness)
    return Array.from({ length: q.shards }, (_, shard) => {
      const { turns, tools } = q.shard(shard)
      return [
        { harness: harness.name, kind: 'turns' as const, shard, queue: turns },
        { harness: harness.name, kind: 'tools' as const, shard, queue: tools },
      ]
    }).flat()
  })
}
