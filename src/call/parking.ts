import { DelayedError, type Job } from 'bullmq'
import type { Harness } from '../core/index.js'
import type { LineLogger } from '../logger.js'
import { sealJobInput, type Fence, type SessionLog } from '../log/index.js'
import { enqueueParkedCall, parkedToolJob, type HarnessQueues, type ToolJobData } from '../queue/index.js'
import { APPROVAL_STEP, type Park } from '../tool/index.js'
import type { ToolCall } from './loggedCall.js'

/** A park of the tool itself (its tool began), not of its limit or its approval before it ran. */
function parkedInTool(p: Park): boolean {
  return p.kind !== 'limit' && !(p.kind === 'ask' && p.stepName === APPROVAL_STEP)
}

/**
 * Parks the call as a BullMQ delayed job: the slot is freed at once and the job runs again from the
 * top at `until`, or earlier when an answer (or a child agent's answer) wakes it. The park slims the
 * job's hash (parkedToolJob). A wake-up that landed before our moveToDelayed would have promoted
 * nothing, so `isWoken` is re-checked after it (R8: no answer is lost).
 */
export async function park(
  job: Job<ToolJobData>,
  token: string | undefined,
  call: ToolCall,
  log: SessionLog,
  fence: Fence,
  p: Park,
  logger: LineLogger,
  isWoken: () => Promise<boolean>,
): Promise<never> {
  // the slimmed data keeps the call's input sealed, as its job's data did (docs/encryption.md)
  const input = await sealJobInput(log.stream.codec, log.sessionId, call.input)
  await log.calls.parkCall(fence, p.kind, p.until, { inTool: parkedInTool(p), job: parkedToolJob(job, { ...call, input }) })
  await job.moveToDelayed(p.until, token)
  logger.debug({ kind: p.kind, until: new Date(p.until).toISOString() }, 'tool call parked')
  if (await isWoken()) await job.promote().catch(() => {})
  throw new DelayedError()
}

/**
 * A runTool call's event wait parks without its BullMQ job (issue 29, row 5f: the job hash and its
 * delayed member were a third of a wait's memory). Not a call of a turn: its job is a child the turn
 * job waits on.
 */
export function parksWithoutJob(job: Job<ToolJobData>, p: Park): boolean {
  return p.kind === 'event' && !job.parentKey
}

/**
 * Parks the call with an event timer instead of a delayed job (src/log/eventTimers.ts): parkCall
 * lists its wake-up time with the park, then the job completes and is removed with its completion.
 * Its event's sender, or the shard's workers at its timeout, enqueue its job again
 * (queue/parked.ts). A wake-up that came while the job still ran found a job and did nothing, so it
 * is re-checked once the job is gone, as is a timeout the timer loop saw while the job still existed.
 */
export async function parkWithoutJob(
  job: Job<ToolJobData>,
  token: string | undefined,
  log: SessionLog,
  fence: Fence,
  p: Park,
  logger: LineLogger,
  isWoken: () => Promise<boolean>,
  deps: { harness: Harness; queuesOf(harness: Harness): HarnessQueues },
): Promise<never> {
  await log.calls.parkCall(fence, p.kind, p.until, { withoutJob: true, inTool: parkedInTool(p) })
  job.opts.removeOnComplete = true
  await job.moveToCompleted(null, token ?? '', false)
  logger.debug({ kind: p.kind, until: new Date(p.until).toISOString() }, 'tool call parked without its job')
  if (Date.now() >= p.until || (await isWoken()))
    await enqueueParkedCall(log, fence.toolCallId, () => deps.queuesOf(deps.harness).of(log.sessionId).tools)
  throw new DelayedError()
}
