import { Job } from 'bullmq'
import { toolJobId, turnJobId } from '../log/index.js'
import type { HarnessQueues } from './queues.js'

/** Removes a job that has finished (completed or failed): its id may be added again. Any other state is left alone. */
async function removeFinished(job: Job | undefined): Promise<void> {
  if (!job) return
  const state = await job.getState()
  if (state === 'completed' || state === 'failed') await job.remove({ removeChildren: false }).catch(() => {})
}

/**
 * Before a rerun (session.rerun): the turn's finished job and the finished jobs of the calls that run
 * again are removed, so the turn and its batch are added again under their ids (a job id that
 * exists would make the add a no-op). A call job that is still running or parked is kept.
 */
export async function clearFinishedTurn(queues: HarnessQueues, sessionId: string, inputId: string, toolCallIds: readonly string[]) {
  await clearFinishedJobs(queues, sessionId, [inputId], toolCallIds)
}

async function clearFinishedJobs(
  queues: HarnessQueues,
  sessionId: string,
  inputIds: readonly string[],
  toolCallIds: readonly string[],
): Promise<void> {
  const { turns, tools } = queues.of(sessionId)
  for (const id of inputIds) await removeFinished(await Job.fromId(turns, turnJobId(sessionId, id)))
  for (const id of toolCallIds) await removeFinished(await Job.fromId(tools, toolJobId(sessionId, id)))
}

/** The turns and calls of a trimmed span by harness (src/log/sessionTrim.ts `TrimPlan.jobs`). */
export type TrimmedJobs = ReadonlyArray<{ harness: string; inputIds: readonly string[]; toolCallIds: readonly string[] }>

/** After trimming (docs/compaction.md): the finished jobs of the span's turns and calls go, so an id used again runs. */
export async function clearTrimmedJobs(
  queuesByName: (harness: string) => HarnessQueues | undefined,
  sessionId: string,
  jobs: TrimmedJobs,
): Promise<void> {
  for (const { harness, inputIds, toolCallIds } of jobs) {
    const queues = queuesByName(harness)
    if (queues) await clearFinishedJobs(queues, sessionId, inputIds, toolCallIds)
  }
}
