import { Queue } from 'bullmq'
import type { Harness, ToolJobData, TurnJobData } from '../core/index.js'
import { shardOf, type RedisClient } from '../log/index.js'
import type { PayloadCodec } from '../codec/index.js'
import { bullPrefix, toolQueueName, turnQueueName } from './names.js'

/** Entries BullMQ keeps in a queue's events stream (its default is 10,000; about 4 a parked call); only a live QueueEvents listener reads it. */
const EVENTS_MAX_LEN = 100

/** The turn and tool queues of one harness in one shard. */
export interface ShardQueues {
  turns: Queue<TurnJobData>
  tools: Queue<ToolJobData>
}

/**
 * The one place that adds, wakes and inspects jobs. Every id is deterministic, so adding a job again
 * is a no-op while it exists: each caller (prompt, runTool, the turn, an agent call, the sweeper) may
 * add again after a crash. A harness has one pair of queues per shard; a session's jobs go to its
 * shard's pair (made on first use).
 */
export class HarnessQueues {
  private readonly made = new Map<number, ShardQueues>()

  constructor(
    readonly harness: Harness,
    /** The queues' connection (the host's client): the ioredis instance every Queue here shares. */
    readonly connection: RedisClient,
    readonly prefix: string,
    readonly shards: number,
    /** Seals each call's input in its job's data (docs/encryption.md). */
    readonly codec?: PayloadCodec,
  ) {}

  /** The queues of shard `shard`. */
  shard(shard: number): ShardQueues {
    let queues = this.made.get(shard)
    if (!queues) {
      // BullMQ's events stream (QueueEvents) is not read by us: a short one keeps its memory small
      const opts = {
        connection: this.connection,
        prefix: bullPrefix(this.prefix, shard, this.shards),
        streams: { events: { maxLen: EVENTS_MAX_LEN } },
      }
      queues = {
        turns: new Queue<TurnJobData>(turnQueueName(this.harness.name), opts),
        tools: new Queue<ToolJobData>(toolQueueName(this.harness.name), opts),
      }
      // with no 'error' listener BullMQ console.errors a stack per reconnect attempt while Redis is down;
      // the connection's owner (the host's client) already reports it
      queues.turns.on('error', () => {})
      queues.tools.on('error', () => {})
      this.made.set(shard, queues)
    }
    return queues
  }

  /** The queues of the session's shard. */
  of(sessionId: string): ShardQueues {
    return this.shard(shardOf(sessionId, this.shards))
  }

  async close(): Promise<void> {
    await Promise.all([...this.made.values()].flatMap((q) => [q.turns.close(), q.tools.close()]))
  }
}

export function createQueues(
  harness: Harness,
  connection: RedisClient,
  prefix: string,
  shards: number,
  codec?: PayloadCodec,
): HarnessQueues {
  return new HarnessQueues(harness, connection, prefix, shards, codec)
}
