import { Queue, type JobsOptions } from 'bullmq'
import type { Harness, ToolJobData, TurnJobData } from '../core/index.js'
import { shardOf, type JobStart, type RedisClient, type StartReply } from '../log/index.js'
import { bullPrefix, toolQueueName, turnQueueName } from './names.js'

/** Entries BullMQ keeps in a queue's events stream (its default is 10,000; about 4 a parked call); only a live QueueEvents listener reads it. */
const EVENTS_MAX_LEN = 100

/** A local lane's slot for a job its request's write starts (src/call/eagerStart.ts reserveStart). */
export interface LaneStart {
  job: JobStart
  sent(reply: Promise<StartReply>): void
}
/** A tool job as enqueue.ts's toolJob makes it. */
type ToolJob = { name: string; data: ToolJobData; opts: JobsOptions }
type JobStarter = (job: ToolJob) => LaneStart | undefined

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
  private readonly fetchers = new Map<number, () => void>()
  private readonly starters = new Map<number, JobStarter>()

  constructor(
    readonly harness: Harness,
    /** The queues' connection (the host's client): the ioredis instance every Queue here shares. */
    readonly connection: RedisClient,
    readonly prefix: string,
    readonly shards: number,
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

  /**
   * A tool lane of this process that fetches on `connection` (workers.ts): `fetchNow` runs right after a
   * runTool job's add is sent there, so the add and the fetch leave in one write (enqueueCallBehind).
   */
  fetchHere(shard: number, fetchNow: () => void): () => void {
    this.fetchers.set(shard, fetchNow)
    return () => {
      if (this.fetchers.get(shard) === fetchNow) this.fetchers.delete(shard)
    }
  }

  /** The `fetchNow` of the session's shard's local lane, if this process runs one. */
  fetcherOf(sessionId: string): (() => void) | undefined {
    return this.fetchers.get(shardOf(sessionId, this.shards))
  }

  /**
   * A tool lane of this process whose slot a new runTool call's request can start its job on
   * (EagerStartWorker.reserveStart, workers.ts): the job runs when that one write's reply comes.
   */
  startHere(shard: number, reserve: JobStarter): () => void {
    this.starters.set(shard, reserve)
    return () => {
      if (this.starters.get(shard) === reserve) this.starters.delete(shard)
    }
  }

  /** A slot of the session's shard's local lane for the job, if this process runs one with a slot free now. */
  startOn(sessionId: string, job: ToolJob): LaneStart | undefined {
    return this.starters.get(shardOf(sessionId, this.shards))?.(job)
  }

  /** The queues of the session's shard. */
  of(sessionId: string): ShardQueues {
    return this.shard(shardOf(sessionId, this.shards))
  }

  async close(): Promise<void> {
    await Promise.all([...this.made.values()].flatMap((q) => [q.turns.close(), q.tools.close()]))
  }
}

export function createQueues(harness: Harness, connection: RedisClient, prefix: string, shards: number): HarnessQueues {
  return new HarnessQueues(harness, connection, prefix, shards)
}
