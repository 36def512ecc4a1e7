import { createHash } from 'node:crypto'
import { AGENT, type AgentToolMarker, type Harness } from '../core/index.js'
import type { BeginResult, ParentCall, SessionLog } from '../log/index.js'
import { enqueueTurn, type HarnessQueues } from '../queue/index.js'
import { Park } from '../tool/index.js'
import type { CallOutcome } from './runCall.js'
import type { ToolCall } from './loggedCall.js'

/** The only input of a child session. */
export const CHILD_INPUT_ID = 'agent-call'
/** A parked agent call re-checks its child this often, in case the child's wake-up was lost. */
const AGENT_RECHECK_MS = 60_000

/** Deterministic, so a run again finds the same child session. */
export function childSessionId(sessionId: string, toolCallId: string): string {
  const hash = createHash('sha256').update(`${sessionId}\0${toolCallId}`).digest('hex').slice(0, 20)
  return `${sessionId.slice(0, 170)}.agent-${hash}`
}

export interface AgentCallDeps {
  /** The harness of the parent call. */
  harness: Harness
  logFor(sessionId: string): SessionLog
  queuesOf(harness: Harness): HarnessQueues
}

/**
 * One attempt of an agent tool call. The child turn runs on its own (durably, on any worker); the
 * call parks until the child settles, then keeps the child's answer as its result. A call cut by a
 * crash gets a tool error (R11), unless its child waits for a person: then it keeps its place.
 */
export async function runAgentCall(
  tool: AgentToolMarker,
  data: ToolCall,
  begin: BeginResult,
  deps: AgentCallDeps,
  interrupted: CallOutcome,
): Promise<CallOutcome> {
  const child = tool[AGENT].harness
  const childLog = deps.logFor(childSessionId(data.sessionId, data.toolCallId))
  if (begin.kind === 'cut' && (await childLog.inputs.openQuestions()).length === 0) return interrupted
  const settled = await childLog.inputs.getSettled(CHILD_INPUT_ID)
  if (settled) {
    return settled.outcome === 'completed'
      ? { result: settled.text ?? '' }
      : { error: settled.error ?? { message: `Agent ${child.name} ${settled.outcome}.` } }
  }
  const input = await childLog.inputs.getInput(CHILD_INPUT_ID)
  if (!input) {
    const prompt = typeof data.input === 'object' && data.input !== null && 'prompt' in data.input ? data.input.prompt : undefined
    const parent: ParentCall = { harness: deps.harness.name, sessionId: data.sessionId, toolCallId: data.toolCallId }
    await childLog.inputs.addInput(CHILD_INPUT_ID, typeof prompt === 'string' ? prompt : JSON.stringify(data.input), child.name, { parent })
  }
  // enqueued again on every wake-up too: a no-op while the turn job exists, a repair if it was lost
  await enqueueTurn(deps.queuesOf(child), child, childLog.sessionId, CHILD_INPUT_ID)
  return { park: new Park('agent', Date.now() + AGENT_RECHECK_MS, childLog.sessionId) }
}

/** True when the child session of a parked agent call has settled (checked again after parking). */
export async function childSettled(logFor: (sid: string) => SessionLog, data: ToolCall): Promise<boolean> {
  const input = await logFor(childSessionId(data.sessionId, data.toolCallId)).inputs.getInput(CHILD_INPUT_ID)
  return input?.status === 'settled'
}
