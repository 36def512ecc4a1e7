// Helpers of the worker liveness tests: which worker process holds a job (its lock token names the
// process), and a wait until a worker process may check others (its connection is old enough).
import type { RedisClient } from '../../src/index.js'
import type { LogEntry } from '../../src/entries/ops.js'
import { toolJobId, turnJobId, type RecordOf } from '../../src/log/index.js'
import { toolQueueName, turnQueueName } from '../../src/queue/index.js'
import { queuePrefix } from '../rig.js'
import type { WorkerProcess } from './workerProcess.js'
import { until } from './log.js'
import { patient } from './patience.js'

/** The message a worker process logs when other processes can find it gone. */
const LIVENESS_ON = 'worker liveness on: other worker processes move its jobs at once if it is gone'
/** How long a process's connection must be up before it checks others (src/liveness/deadWorkers.ts RECONNECT_MS), and a second more. */
const ARMED_MS = 6_000

/** The connection name a worker process announced. */
async function connectionOf(worker: WorkerProcess): Promise<string> {
  const line = await worker.waitFor((l) => l.msg === LIVENESS_ON, patient(30_000))
  return String(line.connection)
}

/** Waits until each worker process has been connected long enough to check the others. */
export async function armed(workers: WorkerProcess[]): Promise<void> {
  const since = await Promise.all(workers.map(async (w) => Number((await w.waitFor((l) => l.msg === LIVENESS_ON, patient(30_000))).time)))
  await until(
    async () => Date.now() - Math.max(...since) >= ARMED_MS,
    'the workers to be connected long enough to check each other',
    30_000,
  )
}

/** The BullMQ key of a tool call's or a turn's job. */
export function jobKey(prefix: string, harness: string, sessionId: string, job: { toolCallId: string } | { inputId: string }): string {
  const base = queuePrefix(prefix, sessionId)
  return 'toolCallId' in job
    ? `${base}:${toolQueueName(harness)}:${toolJobId(sessionId, job.toolCallId)}`
    : `${base}:${turnQueueName(harness)}:${turnJobId(sessionId, job.inputId)}`
}

/** The worker process whose lock token holds the job now. */
export async function holderOf(redis: RedisClient, key: string, workers: WorkerProcess[]): Promise<WorkerProcess> {
  const names = await Promise.all(workers.map(connectionOf))
  let holder: WorkerProcess | undefined
  await until(async () => {
    const token = (await redis.get(`${key}:lock`)) ?? ''
    holder = workers.find((_, i) => token.startsWith(`${names[i]}-`))
    return holder !== undefined
  }, `the worker holding ${key}`)
  return holder!
}

/** The ms (Redis's clock) of a log entry. */
export const entryMs = (entry: LogEntry) => Number(entry.id.split('-')[0])

/** The `harness.tool.started` entries of a call. */
export const startedOf = (entries: LogEntry[], toolCallId: string) =>
  entries.filter(
    (e) => e.record.type === 'harness.tool.started' && (e.record as RecordOf<'harness.tool.started'>).toolCallId === toolCallId,
  )
