import type { Redis } from 'ioredis'
import { StorageError } from '../errors/index.js'
import { isCluster, type RedisClient } from './client.js'
import { runScript, scripts } from './commands/index.js'
import type { SessionLog } from './sessionLog.js'

/**
 * The Redis side of the check for gone worker processes (src/liveness/): which connections a node
 * holds, by name (CLIENT LIST), and the move of a gone process's job (reclaimJob.lua); and of a worker
 * set crashed on purpose (src/harness/crashWorkers.ts), the fence of its calls. The queue keys
 * come from src/lane/bullmqInternals.ts; the log speaks Redis only, so these are names and strings.
 */

/** A job another worker process holds in an active list (lookAtShard.lua): its queue, its id, its lock's token and expiry. */
export interface HeldJob {
  /** Index of the job's queue in the look's `active` keys. */
  queue: number
  jobId: string
  token: string
  /** The lock's expiry (PEXPIRETIME, ms). */
  expiresAt: number
}

/** What a shard look checks for gone processes: the active lists, whose jobs it lists, and how. */
export interface LivenessLook {
  active: readonly string[]
  /** Each active list's queue key prefix (`<bull prefix>:<queue>:`), a job's lock is `<prefix><jobId>:lock`. */
  queuePrefixes: readonly string[]
  /** The claim of the shard's look (ms); 0: no claim (a recheck of suspects). */
  claimMs: number
  /** Tokens of workers that can be checked begin with this; this process's own with `own`. */
  livePrefix: string
  own: string
  maxJobs: number
}

/** The flat `held` reply of lookAtShard.lua as jobs. */
export function heldJobs(flat: ReadonlyArray<string | number>): HeldJob[] {
  const out: HeldJob[] = []
  for (let i = 0; i + 3 < flat.length; i += 4)
    out.push({ queue: Number(flat[i]) - 1, jobId: String(flat[i + 1]), token: String(flat[i + 2]), expiresAt: Number(flat[i + 3]) })
  return out
}

/** A connection a node holds: its name (CLIENT SETNAME) and its age in seconds. */
export interface NamedConnection {
  name: string
  ageS: number
}

/**
 * The named connections of every node: on one Redis, that Redis; on a Cluster, every master and
 * replica the client knows (a process paused through a failover keeps its connections to the old
 * master, now a replica, and to the other masters).
 */
export async function namedConnections(redis: RedisClient): Promise<NamedConnection[][]> {
  const nodes: Redis[] = isCluster(redis) ? redis.nodes('all') : [redis]
  try {
    return await Promise.all(nodes.map(async (node) => parseClientList(String(await node.client('LIST')))))
  } catch (error) {
    throw new StorageError('CLIENT LIST (is a worker process gone?)', '(all sessions)', error)
  }
}

/** `id=1 addr=… name=dh-live-… age=12 …` lines → the named connections. */
export function parseClientList(listing: string): NamedConnection[] {
  const out: NamedConnection[] = []
  for (const line of listing.split('\n')) {
    const name = / name=(\S+)/.exec(line)?.[1]
    if (name) out.push({ name, ageS: Number(/ age=(\d+)/.exec(line)?.[1] ?? 0) })
  }
  return out
}

/** The names this process's connections carry on every node it reaches (CLIENT GETNAME): undefined where a node has none. */
export async function ownConnectionNames(redis: RedisClient): Promise<Array<string | undefined>> {
  const nodes: Redis[] = isCluster(redis) ? redis.nodes('master') : [redis]
  return Promise.all(nodes.map(async (node) => (await node.client('GETNAME')) ?? undefined))
}

/** The keys and fields reclaimJob.lua is given for one job (src/lane/bullmqInternals.ts `reclaimKeys`). */
export interface JobReclaim {
  keys: { job: string; lock: string; active: string; wait: string; stalled: string; meta: string; marker: string; events: string }
  maxStalledCount: number
}

/** Moves a gone process's job back to wait as BullMQ's stalled check does, while its lock is the one seen; true if moved. */
export async function reclaimJob(redis: RedisClient, job: HeldJob, reclaim: JobReclaim): Promise<boolean> {
  const { jobId, token, expiresAt } = job
  try {
    const args = { jobId, token, expiresAt, maxStalledCount: reclaim.maxStalledCount }
    return (await runScript(redis, scripts.reclaimJob, { keys: reclaim.keys, args })) === 1
  } catch (error) {
    throw new StorageError('reclaimJob (the job of a gone worker process)', jobId, error)
  }
}

/** A crashed worker set's call, while its job is still held: a new epoch if it runs, so its attempt writes nothing more; true if fenced. */
export async function fenceAttempt(log: SessionLog, toolCallId: string): Promise<boolean> {
  const { stream } = log
  return (await stream.script(scripts.fenceAttempt, { keys: { calls: stream.keys.calls }, args: { toolCallId } })) === 1
}
