import { Job, type JobsOptions, type Queue } from 'bullmq'
import type { Harness } from '../core/index.js'
import { traceField } from '../telemetry/tracing.js'
import { sealJobInput, toolJobId, turnJobId } from '../log/index.js'
import type { ToolJobData } from '../core/index.js'
import type { HarnessQueues } from './queues.js'

/**
 * A tool job retries only infrastructure failures (a tool's own error is a landed tool error). How
 * long finished jobs are kept is a worker option (finishedJobs), not repeated in every job's hash.
 */
export const toolJobOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 500 },
} as const

/**
 * A turn's attempts are `durability.maxAttempts` (R15): crashes and infrastructure failures of the
 * turn job. A failed model call is not an attempt: `turn.onModelError` retries it (turn/modelRetry.ts).
 */
function turnJobOptions(harness: Harness) {
  return {
    attempts: harness.durability.maxAttempts,
    backoff: { type: 'exponential', delay: 500 },
  }
}

/** Default: completed jobs are kept a day (at most 100,000 a queue), failed ones a week. */
const DEFAULT_FINISHED_JOBS = { completedMs: 24 * 3600_000, failedMs: 7 * 24 * 3600_000 }

/**
 * How long BullMQ keeps finished jobs, as worker options (BullMQ applies them when a job finishes).
 * Removing a finished job is always safe for us: a job added again under its id finds its call done
 * (begin answers 'done') or its turn settled, and does nothing.
 */
export function finishedJobs(keep: { completedMs: number; failedMs: number } = DEFAULT_FINISHED_JOBS) {
  return {
    removeOnComplete: { age: Math.ceil(keep.completedMs / 1000), count: 100_000 },
    removeOnFail: { age: Math.ceil(keep.failedMs / 1000) },
  }
}

/**
 * Adds a turn's job. `priority` (the prompt's, else the harness's default) is BullMQ's: 1 runs first;
 * the turn's calls inherit it (turnJob passes its job's priority to enqueueCalls).
 */
export function enqueueTurn(queues: HarnessQueues, harness: Harness, sessionId: string, inputId: string, priority = harness.priority) {
  return queues
    .of(sessionId)
    .turns.add(
      'turn',
      { harness: harness.name, sessionId, inputId, ...traceField() },
      { ...turnJobOptions(harness), jobId: turnJobId(sessionId, inputId), ...(priority ? { priority } : {}) },
    )
}

export interface CallToEnqueue {
  toolCallId: string
  name: string
  input: unknown
  inputTooLarge?: number
  /** A runTool call begun with its request (ToolJobData.mark). */
  mark?: string
}

/** Where a call belongs: a call of a turn names the turn, and its job may be the turn's child. */
export interface CallOwnerJob {
  inputId?: string
  parent?: { id: string; queue: string }
  /** The turn's BullMQ priority, which its calls inherit. */
  priority?: number
}

/** A tool job's name, data and options (the harness is its queue's). */
export function toolJob(sessionId: string, call: CallToEnqueue, owner: CallOwnerJob = {}) {
  // field by field, not spread: one is made for every call
  const data: ToolJobData = { sessionId, toolCallId: call.toolCallId, input: call.input }
  if (owner.inputId) data.inputId = owner.inputId
  if (call.inputTooLarge !== undefined) data.inputTooLarge = call.inputTooLarge
  if (call.mark !== undefined) data.mark = call.mark
  const { traceparent } = traceField()
  if (traceparent) data.traceparent = traceparent
  const opts: JobsOptions = { ...toolJobOptions, jobId: toolJobId(sessionId, call.toolCallId) }
  if (owner.parent) opts.parent = owner.parent
  if (owner.priority) opts.priority = owner.priority
  return { name: call.name, data, opts }
}

/**
 * Enqueues the calls of a batch (or one runTool call) under their deterministic ids. A turn's batch
 * under `toolExecution: 'sequential'` gets only its first call without a result (`calls` are in call
 * order): when it lands, the turn job runs again and enqueues the next, so no two overlap, whoever
 * runs the turn after a crash.
 */
export async function enqueueCalls(
  queues: HarnessQueues,
  harness: Harness,
  sessionId: string,
  calls: CallToEnqueue[],
  owner: CallOwnerJob = {},
) {
  const now = harness.toolExecution === 'sequential' && owner.inputId ? calls.slice(0, 1) : calls
  const stored = await Promise.all(now.map((call) => jobCall(queues, sessionId, call)))
  return queues.of(sessionId).tools.addBulk(stored.map((call) => toolJob(sessionId, call, owner)))
}

export async function enqueueCall(
  queues: HarnessQueues,
  harness: Harness,
  sessionId: string,
  call: CallToEnqueue,
  owner: CallOwnerJob = {},
) {
  const job = toolJob(sessionId, await jobCall(queues, sessionId, call), owner)
  return queues.of(sessionId).tools.add(job.name, job.data, job.opts)
}

/** The call as its job's data holds it: its input sealed by the queues' codec (docs/encryption.md); itself without one. */
async function jobCall(queues: HarnessQueues, sessionId: string, call: CallToEnqueue): Promise<CallToEnqueue> {
  const input = await sealJobInput(queues.codec, sessionId, call.input)
  return input === call.input ? call : { ...call, input }
}

/**
 * Wakes a parked call now (an answer, a child agent's settle). A no-op when the job is not delayed
 * (still running or parking: it re-checks after it parks) or gone.
 */
export async function wakeCall(queues: HarnessQueues, sessionId: string, toolCallId: string): Promise<void> {
  await (await Job.fromId(queues.of(sessionId).tools, toolJobId(sessionId, toolCallId)))?.promote().catch(() => {})
}

/**
 * Wakes a paused turn (session.resume): its delayed job is promoted; a job that is gone or finished
 * (removed by retention, or failed) is added again, at `priority` (its prompt's), so a resume never
 * waits on a missing job.
 */
export async function wakeTurn(
  queues: HarnessQueues,
  harness: Harness,
  sessionId: string,
  inputId: string,
  priority = harness.priority,
): Promise<void> {
  const job = await Job.fromId(queues.of(sessionId).turns, turnJobId(sessionId, inputId))
  const state = job ? await job.getState() : 'missing'
  if (state === 'delayed') return void (await job!.promote().catch(() => {}))
  if (state === 'missing' || state === 'completed' || state === 'failed') {
    await job?.remove().catch(() => {})
    await enqueueTurn(queues, harness, sessionId, inputId, priority)
  }
}

/**
 * Ends the delayed job of a call that was cancelled while parked: it is promoted, runs at once, finds
 * the call done and completes without running the tool, so the turn it belongs to (its parent) is not
 * left waiting on it. A no-op when the job is not delayed: a job still parking re-checks after its
 * moveToDelayed and promotes itself.
 */
export async function finishCancelledCall(queues: HarnessQueues, sessionId: string, toolCallId: string): Promise<void> {
  await wakeCall(queues, sessionId, toolCallId)
}

type JobState = Awaited<ReturnType<Job['getState']>> | 'missing'

/** What the sweeper needs of a job: its state, and to retry, remove it, or name it as a parent. */
export interface JobHandle {
  state: JobState
  retryFailed(): Promise<void>
  remove(): Promise<void>
  /** The job as the parent of children added to it. */
  asParent(): { id: string; queue: string }
}

async function inspect(queue: Queue, id: string): Promise<JobHandle> {
  const job = await Job.fromId(queue, id)
  return {
    state: job ? await job.getState() : 'missing',
    retryFailed: async () => void (await job?.retry('failed')),
    remove: async () => void (await job?.remove()),
    asParent: () => ({ id, queue: job?.queueQualifiedName ?? '' }),
  }
}

export function inspectTurnJob(queues: HarnessQueues, sessionId: string, inputId: string): Promise<JobHandle> {
  return inspect(queues.of(sessionId).turns, turnJobId(sessionId, inputId))
}

export function inspectCallJob(queues: HarnessQueues, sessionId: string, toolCallId: string): Promise<JobHandle> {
  return inspect(queues.of(sessionId).tools, toolJobId(sessionId, toolCallId))
}
