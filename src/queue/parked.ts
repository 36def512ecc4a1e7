import { Job, type Queue } from 'bullmq'
import { clearEventTimer, eventTimerOf, sealJobInput, toolJobId, type ParkedJob, type SessionLog } from '../log/index.js'
import type { ToolJobData } from '../core/index.js'
import { toolJob } from './enqueue.js'

/** The tool queue of a harness, by its name; undefined for one this process does not reach. */
export type ToolQueueOf = (harness: string) => Queue<ToolJobData> | undefined

/**
 * Gives a call parked without its BullMQ job (a runTool call in step.waitForEvent: its event timer,
 * src/log/eventTimers.ts) its job again, because its event came or its timeout is due. The job is
 * the logged call's, as the sweeper enqueues one (its input is read from the log, and its begin
 * checks it), then the timer goes. A call no longer parked only loses its timer; a call of a harness
 * `toolsOf` does not know is left as it is. True when a job was enqueued.
 */
export async function enqueueParkedCall(log: SessionLog, toolCallId: string, toolsOf: ToolQueueOf): Promise<boolean> {
  const call = await log.calls.getCall(toolCallId)
  if (!call || call.status !== 'parked') {
    await clearEventTimer(log.stream, toolCallId, call?.epoch ?? -1)
    return false
  }
  const tools = call.owner && toolsOf(call.owner.harness)
  if (!tools) return false
  const inputId = call.owner?.inputId
  const logged = await log.findLoggedCall(toolCallId, inputId)
  const tooLarge = logged?.inputTooLarge === undefined ? {} : { inputTooLarge: logged.inputTooLarge }
  const input = await sealJobInput(log.stream.codec, log.sessionId, logged?.input)
  const job = toolJob(log.sessionId, { toolCallId, name: call.name, input, ...tooLarge }, inputId ? { inputId } : {})
  await tools.add(job.name, job.data, job.opts)
  await clearEventTimer(log.stream, toolCallId, call.epoch)
  return true
}

/**
 * Wakes a call waiting for an event on `tools`: its delayed job is promoted (a call of a turn, or one
 * parked by an older version); a call parked without its job gets one (enqueueParkedCall). A no-op
 * for a call whose job is running (it re-checks after it parks) or that is not parked.
 */
export async function wakeEventWait(tools: Queue<ToolJobData>, log: SessionLog, toolCallId: string): Promise<void> {
  const job = await Job.fromId(tools, toolJobId(log.sessionId, toolCallId))
  if (job) return void (await job.promote().catch(() => {}))
  if ((await eventTimerOf(log.stream, toolCallId)) !== null) await enqueueParkedCall(log, toolCallId, () => tools)
}

/**
 * A tool job about to wait delayed, as its park slims its hash (parkCall.lua, includes/slimJob.lua):
 * its data keeps what the job's id does not name, the call's input, turn and trace (a woken job
 * begins with the ids of its id: src/call/loggedCall.ts). docs/decisions/parked-call-memory.md.
 */
export function parkedToolJob(job: Job<ToolJobData>, call: Omit<ToolJobData, 'sessionId' | 'toolCallId' | 'mark'>): ParkedJob {
  const data: ToolJobData = { input: call.input }
  if (call.inputId !== undefined) data.inputId = call.inputId
  if (call.inputTooLarge !== undefined) data.inputTooLarge = call.inputTooLarge
  if (call.traceparent !== undefined) data.traceparent = call.traceparent
  return { key: `${job.queueQualifiedName}:${job.id}`, id: job.id ?? '', data: JSON.stringify(data) }
}
