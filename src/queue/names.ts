import { shardBase } from '../log/index.js'

/**
 * BullMQ names. The queues of one shard carry the shard's hash tag (`<prefix>:{<shard tag>}:jobs`), so
 * a turn (parent) and its tool jobs (children), all of one session, live in one Redis Cluster slot,
 * and the shards' queues spread over the masters. Job ids are built in log/formats.ts: they never
 * contain ':' and never look like integers.
 */
export function bullPrefix(prefix: string, shard: number, shards: number): string {
  return `${shardBase(prefix, shard, shards)}:jobs`
}

export function turnQueueName(harness: string): string {
  return `turns.${harness}`
}

export function toolQueueName(harness: string): string {
  return `tools.${harness}`
}
