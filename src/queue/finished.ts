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
  const { turns, tools } = queues.of(sessionId)
  await removeFinished(await Job.fromId(turns, turnJobId(sessionId, inputId)))
  for (const id of toolCallIds) await removeFinished(await Job.fromId(tools, toolJobId(sessionId, id)))
}
