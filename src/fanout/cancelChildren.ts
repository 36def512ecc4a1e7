import type { SessionLog } from '../log/index.js'
import { finishCancelledCall, type HarnessQueues } from '../queue/index.js'
import { agentOfCall, CHILD_INPUT_ID, childSessionId, type AgentHost } from './place.js'

/** The tool error a cancelled child lands. */
export function childCancelledError(reason: string) {
  return { code: 'cancelled', message: `The call was cancelled: ${reason}.` }
}

interface CancelDeps {
  log: SessionLog
  queues: HarnessQueues
  agents?: AgentHost | undefined
}

/**
 * Cancels children of a fan-out (cancel-siblings, an abort): each is marked, so one not begun yet
 * lands `cancelled` at its begin without running (toolJob.ts), and one parked lands it now, its
 * questions closed, in one write fenced on its parked epoch (cancelCall.lua); its delayed job is then
 * finished. A child agent's turn is aborted too (with its own parked calls and children). A child
 * running now is left to land (its marks are read at its next begin). Safe to run again.
 */
export async function cancelChildren(
  deps: CancelDeps,
  children: ReadonlyArray<{ toolCallId: string; callName: string }>,
  reason: string,
): Promise<void> {
  if (children.length === 0) return
  const { log, queues } = deps
  const ids = children.map((c) => c.toolCallId)
  await log.fanout.markCancelled(ids, reason)
  for (const child of children) {
    const agent = agentOfCall(child.callName)
    const harness = agent === undefined ? undefined : deps.agents?.harnessByName(agent)
    if (harness) await deps.agents!.abortChild(harness, childSessionId(log.sessionId, child.toolCallId), CHILD_INPUT_ID, reason)
  }
  const states = await log.fanout.states(ids)
  const parked = children.filter((_, i) => states[i]?.status === 'parked')
  if (parked.length === 0) return
  const open = await log.inputs.openQuestions()
  for (const child of parked) {
    const state = states[children.indexOf(child)]!
    const questions = open.filter((q) => q.toolCallId === child.toolCallId).map((q) => q.questionId)
    const status = await log.calls.cancelCall(
      { toolCallId: child.toolCallId, epoch: state.epoch },
      child.callName,
      questions,
      childCancelledError(reason),
    )
    if (status === 'ok') await finishCancelledCall(queues, log.sessionId, child.toolCallId)
  }
}

/**
 * Cancels every descendant of the call `rootId` (its turn was aborted, docs/fan-out.md): each is
 * marked, a parked one lands `cancelled` now, one not begun at its begin. Safe to run again.
 */
export async function cancelDescendants(deps: CancelDeps, rootId: string, reason: string): Promise<number> {
  const ids = await deps.log.fanout.descendants(rootId)
  if (ids.length === 0) return 0
  const states = await deps.log.fanout.states(ids)
  const open = ids
    .map((toolCallId, i) => ({ toolCallId, callName: states[i]?.name ?? '', done: states[i]?.status === 'done' }))
    .filter((c) => !c.done)
  await cancelChildren(deps, open, reason)
  return open.length
}
