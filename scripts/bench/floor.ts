// The design's floor: durable calls (enqueued by the host as usual) drained by a bare BullMQ worker
// whose processor only sends the scripts a call cannot do without, with none of the harness around
// them (hooks, signals, timeouts, spans, metrics): for a call its runTool request began (its job
// carries a mark: src/log/callMarks.ts) its steps' saveStep and landResult at epoch 1, two scripts
// for a 1-step call; for a call of a library without that (an older ref), beginCall first. Shared by
// cpuProfile.ts --floor, the calls bench (rows 2g, 2h: 1-step drains on an auto-pipelined log
// connection; rows 2k, 2l: 3-step runTool calls, a plain one) and --against (floor rows). The log
// and queue names come in as `lib`, so --against can run it on a ref's library source.
import { Worker } from 'bullmq'
import { Redis } from 'ioredis'
import type { SessionLog } from '../../src/log/index.js'
import type { bullPrefix, toolQueueName, ToolJobData } from '../../src/queue/index.js'
import { finishedJobs } from '../../src/queue/index.js'

export interface FloorLib {
  SessionLog: typeof SessionLog
  bullPrefix: typeof bullPrefix
  toolQueueName: typeof toolQueueName
}

export interface FloorOptions {
  redisUrl: string
  /** The host's key prefix and the harness whose tool queue holds the calls. */
  prefix: string
  harness: string
  concurrency: number
  /** BullMQ's connection (it duplicates it for blocking reads). */
  connection: Redis
  /** Steps a call saves (a, b, c, ...: values 1, 2, 3, ...), as the tool of the calls does; default 1. */
  steps?: number
  /**
   * The log connection auto-pipelined (default, for the drains). The lone-call floor (row 2k) sends
   * on a plain one: one call at a time, ioredis's pipeline per tick only adds to each round trip.
   */
  autoPipelining?: boolean
}

/**
 * The call ledger of a session's log: its `calls` part, or, in an older library (an `--against` ref from
 * before the log's parts were reached directly), the log itself, which had the same methods.
 */
function ledgerOf(log: SessionLog): SessionLog['calls'] {
  return 'calls' in log && log.calls ? log.calls : (log as unknown as SessionLog['calls'])
}

export function startFloorWorker(lib: FloorLib, o: FloorOptions): { workers: Worker[]; close(): Promise<void> } {
  const logRedis = new Redis(o.redisUrl, { maxRetriesPerRequest: null, enableAutoPipelining: o.autoPipelining ?? true })
  const steps = Array.from({ length: o.steps ?? 1 }, (_, i) => ({ name: String.fromCharCode(97 + i), value: i + 1 }))
  const worker = new Worker<ToolJobData>(
    lib.toolQueueName(o.harness),
    async (job) => {
      // a fresh job's data names its session and call (only a parked job's leaves them to its id)
      const { sessionId = '', toolCallId = '', mark } = job.data
      const log = new lib.SessionLog(logRedis, o.prefix, sessionId)
      const calls = ledgerOf(log)
      // begun with its request: its first delivery runs at epoch 1 (the floor trusts the mark unchecked)
      const epoch = mark !== undefined ? 1 : (await calls.beginCall(toolCallId, job.name, 'safe', { harness: o.harness })).epoch
      const fence = { toolCallId, epoch }
      for (const { name, value } of steps) await calls.saveStep(fence, name, value, { type: 'harness.tool.step', toolCallId, name, value })
      await calls.landResult(fence, job.name, { result: { ok: true } })
    },
    // an older library's bullPrefix takes the prefix only and ignores the shard arguments
    { connection: o.connection, prefix: lib.bullPrefix(o.prefix, 0, 1), concurrency: o.concurrency, ...finishedJobs() },
  )
  return {
    workers: [worker],
    async close() {
      await worker.close()
      logRedis.disconnect()
    },
  }
}
