import { Worker, type ConnectionOptions } from 'bullmq'
import type { Logger } from 'pino'
import { processToolJob, type CallAborts } from '../call/index.js'
import type { Harness } from '../harnessTypes.js'
import type { SessionLog } from '../log/index.js'
import { bullPrefix, toolQueueName, turnQueueName, type HarnessQueues, type ToolJobData, type TurnJobData } from '../queue/index.js'
import { processTurnJob } from '../turn/index.js'

export interface WorkerSetOptions {
  harness: Harness
  queues: HarnessQueues
  connection: ConnectionOptions
  prefix: string
  concurrency: number
  logFor(sessionId: string): SessionLog
  queuesOf(harness: Harness): HarnessQueues
  /** Queues of a harness by name, if this host runs it. */
  queuesByName(name: string): HarnessQueues | undefined
  aborts: CallAborts
  logger: Logger
}

/**
 * The turn and tool workers of one harness. Lock and stalled-check intervals come from the harness's
 * durability options so a dead worker's job is picked up again in seconds; a stalled job is never
 * failed by BullMQ (maxStalledCount is unbounded): our begin/fold classifies it instead.
 */
export function startWorkerSet(options: WorkerSetOptions): Worker[] {
  const { harness, queues, connection, prefix, concurrency, logFor, queuesOf, queuesByName, aborts, logger } = options
  const common = {
    connection,
    prefix: bullPrefix(prefix),
    concurrency,
    lockDuration: harness.durability.lockMs,
    stalledInterval: harness.durability.stalledMs,
    maxStalledCount: Number.MAX_SAFE_INTEGER,
  }
  const tools = new Worker<ToolJobData>(
    toolQueueName(harness.name),
    (job, token) => processToolJob(job, token, { harness, logFor, queuesOf, aborts, logger }),
    common,
  )
  const turns = new Worker<TurnJobData>(
    turnQueueName(harness.name),
    (job, token) => processTurnJob(job, token, { harness, queues, queuesByName, logFor, logger }),
    common,
  )
  for (const worker of [tools, turns]) {
    worker.on('error', (err) => logger.error({ err, queue: worker.name }, 'worker error'))
    worker.on('failed', (job, err) => {
      const data = job?.data as Partial<ToolJobData & TurnJobData> | undefined
      logger.warn({ err, queue: worker.name, jobId: job?.id, sessionId: data?.sessionId, toolCallId: data?.toolCallId, inputId: data?.inputId, attempt: job?.attemptsMade }, 'job failed')
    })
  }
  return [tools, turns]
}
