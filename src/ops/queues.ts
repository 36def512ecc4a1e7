import type { Queue } from 'bullmq'
import type { Harness } from '../harnessTypes.js'
import type { HarnessQueues } from '../queue/index.js'

/** One BullMQ queue of a host, named for operators (stats, metrics, the dashboard's queue views). */
export interface QueueRef {
  harness: string
  kind: 'turns' | 'tools'
  /** The Redis Cluster slot group its keys share; one (`jobs`) until queues are sharded. */
  shard: string
  queue: Queue
}

/**
 * Every queue of a host's harnesses: the one list stats, metrics and the dashboard read, so sharded
 * queues (one set per shard) plug in here.
 */
export function hostQueues(harnesses: Iterable<Harness>, queuesOf: (harness: Harness) => HarnessQueues): QueueRef[] {
  return [...harnesses].flatMap((harness) => {
    const q = queuesOf(harness)
    return [
      { harness: harness.name, kind: 'turns' as const, shard: 'jobs', queue: q.turns as Queue },
      { harness: harness.name, kind: 'tools' as const, shard: 'jobs', queue: q.tools as Queue },
    ]
  })
}
