import { FencedError, QuestionExpiredError } from '../errors/index.js'
import type { Harness } from '../core/index.js'
import type { BeginResult, SessionLog } from '../log/index.js'
import { APPROVAL_STEP, questionIdOf, toToolError, type SecretStore } from '../tool/index.js'
import { stepContext, type CallOutcome } from './runCall.js'

/** True for a tool that waits for a person's approval before it runs (TanStack's `needsApproval`). */
export function needsApproval(tool: unknown): boolean {
  return typeof tool === 'object' && tool !== null && 'needsApproval' in tool && tool.needsApproval === true
}

/**
 * True when a person decided this call's approval. Until then its tool cannot have run, so an attempt
 * cut before the decision (a crash between asking and parking) is no cut of the tool: it waits on.
 */
export async function approvalDecided(log: SessionLog, toolCallId: string): Promise<boolean> {
  return !!(await log.inputs.getQuestion(questionIdOf(toolCallId, APPROVAL_STEP)))?.answer.found
}

/**
 * The approval of a `needsApproval` call, before the tool runs: asked once as a question of kind
 * 'approval' (stored like a step, so a crash anywhere keeps the decision and applies it once), answered
 * from any process with `{ approved, reason? }`. Returns 'approved', the park while nobody has
 * decided (no worker slot, R14), or the tool error the model reads when denied or expired.
 */
export async function decideApproval(
  harness: Harness,
  log: SessionLog,
  call: { toolCallId: string; name: string; input: unknown },
  begin: BeginResult,
  secrets: SecretStore,
): Promise<'approved' | CallOutcome> {
  const handle = stepContext(harness, log, call.toolCallId, begin, secrets)
  const input = JSON.stringify(call.input ?? {})
  const message = `Run ${call.name} with ${input.length > 500 ? `${input.slice(0, 500)}…` : input}?`
  const { approvalTimeoutMs } = harness.durability
  try {
    const decision = await handle.approval(message, approvalTimeoutMs === undefined ? undefined : Date.now() + approvalTimeoutMs)
    if (decision.approved) return 'approved'
    return { error: { code: 'approval_denied', message: `A person denied this call${decision.reason ? `: ${decision.reason}` : '.'}` } }
  } catch (error) {
    if (handle.failure) throw handle.failure
    if (handle.parked) return { park: handle.parked }
    if (error instanceof FencedError) throw error
    if (error instanceof QuestionExpiredError) {
      return { error: { code: 'approval_expired', message: 'Nobody approved this call in time; it did not run.' } }
    }
    return { error: toToolError(error) }
  }
}
