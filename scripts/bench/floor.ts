// The design's floor: durable 1-step calls (enqueued by the host as usual) drained by a bare BullMQ
// worker whose processor only sends the scripts a call cannot do without, on an auto-pipelined
// connection, with none of the harness around them (hooks, signals, timeouts, spans, metrics): for a
// call its runTool request began (its job carries a mark: src/log/callMarks.ts) saveStep and
// landResult at epoch 1, two scripts; for a call of a library without that (an older ref), beginCall,
// saveStep and landResult. Shared by cpuProfile.ts --floor, the calls bench (row 2g) and --against
// (floor rows). The log and queue names come in as `lib`, so --against can run it on a ref's library source.
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
}

export function startFloorWorker(lib: FloorLib, o: FloorOptions): { workers: Worker[]; close(): Promise<void> } {
  const logRedis = new Redis(o.redisUrl, { maxRetriesPerRequest: null, enableAutoPipelining: true })
  const worker = new Worker<ToolJobData>(
    lib.toolQueueName(o.harness),
    async (job) => {
      const { sessionId, toolCallId, mark } = job.data
      const log = new lib.SessionLog(logRedis, o.prefix, sessionId)
      // begun with its request: its first delivery runs at epoch 1 (the floor trusts the mark unchecked)
      const epoch = mark !== undefined ? 1 : (await log.beginCall(toolCallId, job.name, 'safe', { harness: o.harness })).epoch
      const fence = { toolCallId, epoch }
      await log.saveStep(fence, 'a', 1, { type: 'harness.tool.step', toolCallId, name: 'a', value: 1 })
      await log.landResult(fence, job.name, { result: { ok: true } })
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
