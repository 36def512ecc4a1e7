import type { Worker } from 'bullmq'
import type { AgentHost } from '../fanout/index.js'
import type { Logger } from 'pino'
import { CallAborts } from '../call/index.js'
import { ConfigError } from '../errors/index.js'
import type { Harness } from '../core/index.js'
import { openMember, OpenWork, ownConnectionNames, type CallMarks, type RedisClient, type SessionLog } from '../log/index.js'
import type { HarnessQueues } from '../queue/index.js'
import { nameAfterProcess, type LocalLane } from '../lane/index.js'
import { DeadWorkers, type ProcessLiveness } from '../liveness/index.js'
import type { Notifier } from './notifier.js'
import { startEventTimerLoop } from './eventTimerLoop.js'
import { startSweepTimer } from './sweepTimer.js'
import { closeWorkers, startWorkerSet, type CloseOptions, type CloseResult } from './workers.js'
import { crashable, crashWorkerSet } from './crashWorkers.js'

/** The workers `host.startWorkers()` started: close them to stop taking jobs. */
export interface WorkersHandle {
  /**
   * Stops taking jobs and waits for active ones to finish (BullMQ hands unfinished ones back), at most
   * `timeoutMs`; `forced` names the queues whose workers it stopped waiting for.
   */
  close(options?: CloseOptions): Promise<CloseResult>
  readonly workers: ReadonlyArray<Worker>
}

/** What `startHostWorkers` takes of its host: the connection, the harnesses and their queues, its passes. */
export interface HostWorkersContext {
  redis: RedisClient
  prefix: string
  shards: number
  /** Every harness of the host, agent tools' child harnesses included. */
  all: readonly Harness[]
  notifier: Notifier
  logger: Logger
  logFor(sessionId: string): SessionLog
  queuesOf(harness: Harness): HarnessQueues
  queuesByName(name: string): HarnessQueues | undefined
  agents: AgentHost
  keepJobs: { completedMs: number; failedMs: number } | undefined
  /** Resolves once the deployment's shard count is known to match (rejects with ShardCountError). */
  checkShards(): Promise<void>
  /** The deployment's call marks, known once checkShards resolved. */
  callMarks(): CallMarks | undefined
  sweepOnce(options: { shards: readonly number[] }): Promise<unknown>
  retain(options: { shards: readonly number[] }): Promise<unknown>
  /** The host's running worker sets: a handle adds itself, and takes itself out on close. */
  running: WorkersHandle[]
  /** The schedules' tick worker (run by the workers that serve shard 0, where the schedules' queue is). */
  scheduleWorker(): Worker
  /** The host's local lane (HostOptions.localLane). */
  lane: LocalLane
  /** The host's name as a worker process, when worker liveness is on (HostOptions.workerLiveness). */
  liveness: ProcessLiveness | undefined
}

/** Why a settle message's turn ended: its settled record's error message, else its outcome (never throws). */
function settledReason(payload: string): string {
  let record: unknown = null
  try {
    record = JSON.parse(payload)
  } catch {
    // not a record: the turn settled, that is all it says
  }
  if (typeof record !== 'object' || record === null) return 'Turn settled.'
  const error = 'error' in record && typeof record.error === 'object' && record.error !== null ? record.error : undefined
  if (error && 'message' in error && typeof error.message === 'string') return error.message
  return `Turn ${'outcome' in record && typeof record.outcome === 'string' ? record.outcome : 'settled'}.`
}

/** Whether every node this process reaches shows its command connection by its liveness name (CLIENT GETNAME). */
async function namesKept(redis: RedisClient, liveness: ProcessLiveness, logger: Logger): Promise<boolean> {
  const names = await ownConnectionNames(redis).catch(() => [undefined])
  if (names.every((name) => name === liveness.connectionName)) {
    logger.info({ connection: liveness.connectionName }, 'worker liveness on: other worker processes move its jobs at once if it is gone')
    return true
  }
  logger.warn("worker liveness off: Redis did not keep this connection name (CLIENT SETNAME); a dead worker's jobs wait for their locks")
  return false
}

/** `host.startWorkers()`: turn and tool workers of every harness on the served shards, and the sweep timer. */
export function startHostWorkers(
  host: HostWorkersContext,
  {
    concurrency = 10,
    sweepEveryMs = 30_000,
    shards: served,
  }: { concurrency?: number; sweepEveryMs?: number; shards?: readonly number[] } = {},
): WorkersHandle {
  const { notifier, shards, logger } = host
  // a turn that settled (aborted, timed out, from any process) ends its calls still running here:
  // their ctx.abortSignal fires and each lands an 'aborted' tool error; a cancelled child lands 'cancelled'
  const aborts = new CallAborts()
  const unlisten = notifier.listen((message) => {
    // a fan-out's child cancelled by its tree (docs/fan-out.md): its attempt running here stops
    if (message.kind === 'cancel') return aborts.cancelChild(message.sessionId, message.id, message.payload)
    if (message.kind !== 'input') return
    aborts.abortTurn(openMember(message.sessionId, message.id), settledReason(message.payload))
  })
  const serving = served ?? Array.from({ length: shards }, (_, shard) => shard)
  for (const shard of serving)
    if (!Number.isInteger(shard) || shard < 0 || shard >= shards)
      throw new ConfigError(`startWorkers: shard ${JSON.stringify(shard)} does not exist (shards are 0 to ${shards - 1}).`)
  const { liveness } = host
  const openWork = new OpenWork(host.redis, host.prefix, shards)
  // a worker process that is gone (its connections closed) has its jobs moved at once (src/liveness/)
  let dead = liveness && new DeadWorkers({ redis: host.redis, openWork, liveness, logger })
  const unwatch = liveness?.watch(host.redis)
  // each worker with its queue's shard, for a crash's look at its active jobs (crashWorkers.ts)
  const placed: Array<{ worker: Worker; shard: number }> = []
  const workers = host.all.flatMap((harness) =>
    serving.flatMap((shard) => {
      const set = startWorkerSet({
        harness,
        queues: host.queuesOf(harness),
        connection: host.redis,
        prefix: host.prefix,
        shard,
        shards,
        concurrency,
        logFor: host.logFor,
        queuesOf: host.queuesOf,
        queuesByName: host.queuesByName,
        agents: host.agents,
        aborts,
        logger,
        callMarks: host.callMarks,
        lane: host.lane,
        doubt: liveness,
        ...(host.keepJobs ? { keepJobs: host.keepJobs } : {}),
      })
      dead?.watch(shard, set)
      placed.push(...set.map((worker) => ({ worker, shard })))
      return set
    }),
  )
  const named = [...workers]
  if (serving.includes(0)) {
    const ticks = host.scheduleWorker()
    workers.push(ticks)
    placed.push({ worker: ticks, shard: 0 }) // the schedules' queue is in shard 0
  }
  // the workers take jobs once the shard count is known to match; a mismatch is logged and they stay idle
  let eventTimers: { stop(): void } | undefined
  let closing = false
  host.checkShards().then(
    async () => {
      // the workers' ids name this process in their lock tokens only where Redis keeps its connection's name
      if (liveness && (await namesKept(host.redis, liveness, logger)))
        for (const worker of named) nameAfterProcess(worker, liveness.tokenPrefix)
      else dead = undefined
      for (const worker of workers)
        if (!worker.closing) worker.run().catch((err: unknown) => logger.error({ err, queue: worker.name }, 'worker stopped'))
      // the timeouts of the calls parked without a job (runTool event waits): the workers enqueue them when due
      if (!closing)
        eventTimers = startEventTimerLoop({ openWork, logFor: host.logFor, queuesByName: host.queuesByName, logger, dead }, serving)
    },
    (err: unknown) => logger.error({ err }, 'workers not started'),
  )
  const sweeper =
    sweepEveryMs > 0
      ? startSweepTimer(
          async () => (await host.sweepOnce({ shards: serving }), await host.retain({ shards: serving })),
          sweepEveryMs,
          logger,
        )
      : null
  const { running } = host
  const stopLoops = () => {
    if (closing) return
    sweeper?.stop()
    closing = true
    eventTimers?.stop()
    dead?.stop()
    unwatch?.()
    unlisten()
  }
  const handle: WorkersHandle = {
    workers,
    async close(closeOptions) {
      stopLoops()
      const result = await closeWorkers(workers, closeOptions)
      if (running.includes(handle)) running.splice(running.indexOf(handle), 1)
      return result
    },
  }
  running.push(handle)
  // a test's SIGKILL-equivalent of this set (the testing kit's env.crash); close() after it has nothing left to wait for
  const { redis, logFor } = host
  return crashable(handle, () => crashWorkerSet({ redis, openWork, logFor, logger, workers: placed, stopLoops }))
}
