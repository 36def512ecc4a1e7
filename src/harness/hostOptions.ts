import type { Logger } from 'pino'
import type { Duration } from '../tool/index.js'
import type { RetentionOptions } from '../retention/index.js'
import type { RedisConnection } from './connection.js'
import type { Harness } from './defineHarness.js'
import type { PayloadCodec } from '../codec/index.js'

/** Options of `createHarnessHost`: where Redis is, the harnesses, the key prefix, shards, retention and a logger. */
export interface HostOptions {
  /**
   * A redis:// or rediss:// URL, ioredis options, or a Redis Cluster: `{ cluster: nodes, options? }`, an
   * ioredis `Cluster`, or a comma-separated list of node URLs (see RedisConnection).
   */
  redis: RedisConnection
  /**
   * Sessions map to this many shards by a stable hash of their id; each shard has its own queues,
   * indexes and wake-up channel under its own hash tag (on a Cluster, they spread over the masters).
   * Fixed per deployment (prefix): a host with another count is refused with ShardCountError.
   * Default: DH_SHARDS, else 1.
   */
  shards?: number
  /**
   * Step and result writes wait for this many replicas (`WAIT replicas timeoutMs`, default 1 and 200 ms)
   * before they count as done: with Redis's asynchronous replication a failover can otherwise lose the
   * last writes a master acknowledged. Costs a replication round trip per step and result (docs/deploy.md).
   */
  waitReplicas?: { replicas?: number; timeoutMs?: number }
  harnesses: ReadonlyArray<Harness>
  /** Key prefix of every key this host writes. */
  prefix?: string
  logger?: Logger
  /**
   * How long a tool call attempt retries a write Redis refused (e.g. OOM) before its job fails and
   * the call is picked up again as a cut (default 10 s). A write of ours never lands as a tool error.
   */
  writeRetryMs?: number
  /** What is kept for how long (docs/retention.md); without it nothing of a session is removed. */
  retention?: RetentionOptions
  /** Machine events (`sendEvent`): how long an event no call waits for yet, and a seen event id, are kept (default '24h'). */
  events?: { retention?: Duration }
  /**
   * The local lane (default: DH_LOCAL_LANE, else on): work this process starts, fetches and wakes for
   * itself past BullMQ's public path (docs/harness.md). `false`: Queue.add and plain Worker fetches only.
   * On, bullmq must be the version the lane was verified with, else UnverifiedBullmqError.
   */
  localLane?: boolean
  /**
   * Worker liveness (default: DH_WORKER_LIVENESS, else on): the workers of a process that is gone (its
   * connections closed: SIGKILL, OOM) have their jobs moved at once by the other worker processes,
   * instead of after their locks expire; a paused process is never found gone (docs/recovery.md). Its
   * command connection is named `dh-live-<id>`. Needs CLIENT SETNAME and CLIENT LIST, and bullmq 6.7.x.
   */
  workerLiveness?: boolean
  /**
   * Seals what users and models wrote (prompts, messages, tool inputs and results, step values,
   * answers, event payloads, app records) before it reaches Redis, and opens it on read
   * (docs/encryption.md): `aesGcmCodec({ keys, current })`, or a codec of your own (a KMS envelope).
   * Every process of the deployment needs the codec and every key its data was sealed with.
   */
  codec?: PayloadCodec
}
