import { CHILD_INPUT_ID, cancelParkedCall, childSessionId } from '../call/index.js'
import { AGENT, isAgentTool, toolOf, type Harness } from '../core/index.js'
import type { SessionLog } from '../log/index.js'
import { finishCancelledCall, type HarnessQueues } from '../queue/index.js'
import { cancelDescendants, type AgentHost } from '../fanout/index.js'

export interface CancelDeps {
  harness: Harness
  log: SessionLog
  queues: HarnessQueues
  /** The host's harnesses, and how the turn of a child session (an agent call's) is aborted, with its own parked calls. */
  agents: AgentHost
}

/** A parked call seen again this often under a newer epoch (it woke, asked again, parked) is left to wake. */
const MAX_TRIES = 3

/**
 * Ends the parked calls of an aborted turn: each lands the `cancelled` tool error and closes its open
 * questions in one fenced write (cancelCall), then its delayed job is finished. An agent call's child
 * turn is aborted first, so a crash in between leaves a parent call that wakes (its 60 s re-check)
 * into an aborted turn and lands `cancelled` itself. A call that woke meanwhile is left to its worker:
 * its begin sees the aborted turn, or its abortSignal fires. Safe to run again: cancelled calls are done.
 * Returns the ids of the calls this pass cancelled.
 */
export async function cancelParkedCalls(deps: CancelDeps, inputId: string, reason: string): Promise<string[]> {
  const cancelled: string[] = []
  for (const toolCallId of await deps.log.turnCallIds(inputId)) {
    if (await cancelTree(deps, toolCallId, reason, `its turn was aborted (${reason})`)) cancelled.push(toolCallId)
  }
  return cancelled
}

/**
 * Cancels one call and its fan-out (`session.cancelCall`): every descendant, at any depth, is marked
 * and ended now if parked (a child agent's turn aborted); the call itself lands `cancelled` if it is
 * parked. True when it did; a call running now is left to land (its children's cancels reach it).
 */
export async function cancelTree(deps: CancelDeps, toolCallId: string, reason: string, childReason = reason): Promise<boolean> {
  const { log } = deps
  // its fan-out's children, at any depth (docs/fan-out.md): marked, and ended now if parked
  await cancelDescendants(deps, toolCallId, childReason)
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const call = await log.calls.getCall(toolCallId)
    if (call?.status !== 'parked') return false
    const tool = toolOf(deps.harness, call.name)
    if (isAgentTool(tool)) {
      await deps.agents.abortChild(tool[AGENT].harness, childSessionId(log.sessionId, toolCallId), CHILD_INPUT_ID, reason)
    }
    const status = await cancelParkedCall(log, { toolCallId, epoch: call.epoch }, call.name, reason)
    if (status === 'moved') continue
    if (status !== 'ok') return false
    await finishCancelledCall(deps.queues, log.sessionId, toolCallId)
    return true
  }
  return false
}
