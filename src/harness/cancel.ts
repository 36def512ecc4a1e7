import { CHILD_INPUT_ID, cancelParkedCall, childSessionId } from '../call/index.js'
import { AGENT, isAgentTool, toolOf, type Harness } from '../core/index.js'
import type { SessionLog } from '../log/index.js'
import { finishCancelledCall, type HarnessQueues } from '../queue/index.js'
import { cancelDescendants } from '../fanout/index.js'

export interface CancelDeps {
  harness: Harness
  log: SessionLog
  queues: HarnessQueues
  /** Aborts the turn of a child session (an agent tool call's), with its own parked calls. */
  abortChild(harness: Harness, sessionId: string, inputId: string, reason: string): Promise<unknown>
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
  const { log } = deps
  const cancelled: string[] = []
  for (const toolCallId of await log.turnCallIds(inputId)) {
    // its fan-out's children, at any depth (docs/fan-out.md): marked, and ended now if parked
    await cancelDescendants(deps, toolCallId, `its turn was aborted (${reason})`)
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const call = await log.calls.getCall(toolCallId)
      if (call?.status !== 'parked') break
      const tool = toolOf(deps.harness, call.name)
      if (isAgentTool(tool)) {
        await deps.abortChild(tool[AGENT].harness, childSessionId(log.sessionId, toolCallId), CHILD_INPUT_ID, reason)
      }
      const status = await cancelParkedCall(log, { toolCallId, epoch: call.epoch }, call.name, reason)
      if (status === 'moved') continue
      if (status === 'ok') {
        cancelled.push(toolCallId)
        await finishCancelledCall(deps.queues, log.sessionId, toolCallId)
      }
      break
    }
  }
  return cancelled
}
