import type { Job, Processor, WorkerOptions } from 'bullmq'
import { Cluster, Redis } from 'ioredis'
import { LockWatchingWorker, skipsBegin, type AttemptLocks } from '../call/index.js'
import { toolOf, type Harness, type ToolJobData } from '../core/index.js'
import { ConfigError } from '../errors/index.js'
import {
  callFingerprint,
  isCluster,
  sealJobInput,
  shardOf,
  startCall,
  type CallMarks,
  type RedisClient,
  type SessionLog,
} from '../log/index.js'
import { enqueueCall, toolJob, type CallToEnqueue, type HarnessQueues } from '../queue/index.js'
import { afterJobAdd, assertVerifiedBullmq, EagerStartWorker, type LaneJob, type LaneStart } from './bullmqInternals.js'
import { sendCorked } from './sendHooks.js'

/** Who waits in this process for a landing (the host's Notifier): woken from the landing's own reply. */
interface LocalWaiters {
  deliver(messageKey: string, payload: string): void
  awaitedOnlyHere(messageKey: string): boolean
}

/**
 * The local lane: the work a process starts, fetches and wakes for itself without BullMQ's public
 * path, because its producer and its workers share the process (docs/architecture.md, glossary). Off
 * (`createHarnessHost({ localLane: false })`, DH_LOCAL_LANE=off), every call goes through Queue.add
 * and plain Worker fetches, and every landing through the PUBLISH (docs/decisions/local-lane-seam.md).
 */
export interface LocalLane {
  readonly enabled: boolean
  /**
   * runTool's request and job of a new call (a generated id). On: the request with the job's add
   * behind it in one socket write and a local lane's fetch behind that, or, for a tool that may skip
   * its begin (callMarks.ts) while a lane of this process has a slot free, the job started on that
   * slot in the request's own write (startCall.lua). Off: the request, then Queue.add.
   */
  enqueueNewCall(queues: HarnessQueues, harness: Harness, log: SessionLog, call: NewCall, marks: CallMarks | undefined): Promise<unknown>
  /** A tool queue's fetch lane: an EagerStartWorker (on) or a plain BullMQ worker (off). */
  toolWorker(name: string, processor: Processor<ToolJobData>, options: WorkerOptions, locks: AttemptLocks): LockWatchingWorker<ToolJobData>
  /**
   * The tool workers of `queues`' shard `shard` take this process's new calls (on), until one closes.
   * `connection`: theirs; a lane fetches behind an add only when the queues add on it too (in order).
   */
  serve(
    queues: HarnessQueues,
    shard: number,
    workers: readonly LockWatchingWorker<ToolJobData>[],
    connection: RedisClient | undefined,
  ): void
  /** True for a job a lane started in its request's write: its first attempt skips its begin (loggedCall.ts). */
  startedHere(job: Job): boolean
  /** SessionLog options: a landing wakes `waiters` of this process from its reply, and sends no PUBLISH when only they wait (on). */
  landingOptions(waiters: LocalWaiters): { landed?(key: string, record: string): void; awaitedOnlyHere?(key: string): boolean }
}

type NewCall = { toolCallId: string; name: string; input: unknown }

/**
 * Whether the local lane is on: `option` when given (HostOptions.localLane), else DH_LOCAL_LANE
 * (`on` or `off`, default on). A bad DH_LOCAL_LANE is a ConfigError.
 */
export function localLaneEnabled(option: boolean | undefined, env = process.env.DH_LOCAL_LANE): boolean {
  if (option !== undefined) return option
  const value = (env ?? '').trim().toLowerCase()
  if (value === '' || value === 'on') return true
  if (value === 'off') return false
  throw new ConfigError(`DH_LOCAL_LANE=${JSON.stringify(env)}: use "on" or "off" (off runs every job through BullMQ's public path).`)
}

/**
 * The host's local lane. On, the installed BullMQ must be the one the lane was verified with, else
 * UnverifiedBullmqError (which says how to turn the lane off).
 */
export function createLocalLane(enabled: boolean, bullmqVersion?: string): LocalLane {
  if (!enabled) return publicPath
  assertVerifiedBullmq(bullmqVersion)
  return new OnLane()
}

/** The lane off: BullMQ's public path only. */
const publicPath: LocalLane = {
  enabled: false,
  async enqueueNewCall(queues, harness, log, call, marks) {
    const { toolCallId, name, input } = call
    const marked = markedCall(harness, log, call, marks)
    // the request is logged before the job exists: a job begins only as its logged call
    const reply = await log.via(queues.connection).calls.requestCall(toolCallId, name, input, marked?.begin)
    await enqueueCall(queues, harness, log.sessionId, marked?.call ?? call)
    return reply
  },
  toolWorker: (name, processor, options, locks) => new LockWatchingWorker<ToolJobData>(name, processor, options, locks),
  serve: () => {},
  startedHere: () => false,
  landingOptions: () => ({}),
}

/** A new call of a tool that may skip its begin, begun with its request and its job marked (callMarks.ts). */
function markedCall(harness: Harness, log: SessionLog, call: NewCall, marks: CallMarks | undefined) {
  if (!marks || !skipsBegin(toolOf(harness, call.name))) return undefined
  const fingerprint = callFingerprint(call.name, call.input)
  const mark = marks.sign(log.sessionId, call.toolCallId, fingerprint, Date.now())
  return { begin: { harness: harness.name, fingerprint, version: harness.version }, call: { ...call, mark } }
}

type MarkedCall = NonNullable<ReturnType<typeof markedCall>>

/** A shard's lanes of one harness in this process. */
interface ShardLanes {
  workers: readonly EagerStartWorker<ToolJobData>[]
  /** The first lane fetches behind a runTool add (it shares the queues' connection). */
  fetchesBehind: boolean
}

class OnLane implements LocalLane {
  readonly enabled = true
  private readonly lanes = new Map<HarnessQueues, Map<number, ShardLanes>>()
  private readonly started = new WeakSet<Job>()

  toolWorker(name: string, processor: Processor<ToolJobData>, options: WorkerOptions, locks: AttemptLocks) {
    const connection = options.connection
    // the lane drops the queue's stale marker on its own connection (keys of one queue share a slot on a Cluster)
    const redis = connection instanceof Redis || connection instanceof Cluster ? connection : undefined
    return new EagerStartWorker<ToolJobData>(name, processor, options, locks, redis, this.started)
  }

  serve(queues: HarnessQueues, shard: number, workers: readonly LockWatchingWorker<ToolJobData>[], connection: RedisClient | undefined) {
    const eager = workers.filter((w): w is EagerStartWorker<ToolJobData> => w instanceof EagerStartWorker)
    if (eager.length === 0) return
    let byShard = this.lanes.get(queues)
    if (!byShard) this.lanes.set(queues, (byShard = new Map()))
    // in order only on one connection of one Redis: a Cluster's redirect could reorder the add and the fetch
    const lanes = { workers: eager, fetchesBehind: Boolean(connection && !isCluster(connection) && connection === queues.connection) }
    byShard.set(shard, lanes)
    const stop = () => {
      if (byShard.get(shard) === lanes) byShard.delete(shard)
    }
    for (const lane of eager) lane.once('closing', stop)
  }

  startedHere(job: Job): boolean {
    return this.started.has(job)
  }

  landingOptions(waiters: LocalWaiters) {
    return {
      landed: (key: string, record: string) => waiters.deliver(key, record), // a caller here hears it from the reply
      awaitedOnlyHere: (key: string) => waiters.awaitedOnlyHere(key), // and no other process waits: no PUBLISH
    }
  }

  enqueueNewCall(queues: HarnessQueues, harness: Harness, log: SessionLog, call: NewCall, marks: CallMarks | undefined) {
    const { toolCallId, name, input } = call
    const marked = markedCall(harness, log, call, marks)
    if (!marked)
      return this.requestThenAdd(queues, harness, log, call, (client) => log.via(client).calls.requestCall(toolCallId, name, input))
    // the job's data holds the input sealed (docs/encryption.md); its mark is of the input as made
    const stored = sealJobInput(queues.codec, log.sessionId, input)
    if (stored instanceof Promise) return stored.then((sealed): Promise<unknown> => this.startNewCall(queues, harness, log, marked, sealed))
    return this.startNewCall(queues, harness, log, marked, stored)
  }

  /** A marked new call started on a lane of this process with a free slot, else requested and added. */
  private startNewCall(queues: HarnessQueues, harness: Harness, log: SessionLog, marked: MarkedCall, stored: unknown): Promise<unknown> {
    const { toolCallId, name, input } = marked.call
    const start = this.reserveStart(
      queues,
      log.sessionId,
      toolJob(log.sessionId, stored === input ? marked.call : { ...marked.call, input: stored }),
    )
    if (!start)
      return this.requestThenAdd(queues, harness, log, marked.call, (client) =>
        log.via(client).calls.requestCall(toolCallId, name, input, marked.begin),
      )
    // the lane's slot is held from here: the reply (or its failure) gives the job to it or gives it back
    const reply = startCall(log.stream.via(queues.connection), marked.call, marked.begin, start.job, stored)
    start.sent(reply)
    return reply
  }

  /** A slot for `job` on the first lane of its shard that has one free now (the first lane fetches always; the spares while busy). */
  private reserveStart(queues: HarnessQueues, sessionId: string, job: LaneJob<ToolJobData>): LaneStart | undefined {
    for (const lane of this.lanes.get(queues)?.get(shardOf(sessionId, queues.shards))?.workers ?? []) {
      const start = lane.reserveStart(job)
      if (start) return start
    }
    return undefined
  }

  /**
   * The call's job added right behind the command `first` sends on the queues' connection: Redis runs
   * the two in the order sent, so what `first` writes exists before the job does, in one socket write
   * (issue 24), and a lane of this process fetches the job right behind its add. On a Cluster (a
   * redirect could reorder the two) `first` is awaited before the add. Resolves with `first`'s reply.
   */
  private async requestThenAdd<T>(
    queues: HarnessQueues,
    harness: Harness,
    log: SessionLog,
    call: CallToEnqueue,
    first: (client: RedisClient) => Promise<T>,
  ): Promise<T> {
    const client = queues.connection
    if (isCluster(client)) {
      const reply = await first(client)
      await enqueueCall(queues, harness, log.sessionId, call)
      return reply
    }
    const shard = shardOf(log.sessionId, queues.shards)
    const lanes = this.lanes.get(queues)?.get(shard)
    const fetcher = lanes?.fetchesBehind ? lanes.workers[0] : undefined
    const [reply] = await sendCorked(client, () => {
      // a process without a lane of that shard (a caller only) watches nothing
      if (fetcher) afterJobAdd(client, queues.shard(shard).tools, () => fetcher.fetchNow())
      return Promise.all([first(client), enqueueCall(queues, harness, log.sessionId, call)])
    })
    return reply
  }
}
