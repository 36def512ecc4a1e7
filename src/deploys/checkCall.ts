import { LEGACY_TOOLS, toolOfCall, type Harness } from '../core/index.js'
import { RESERVED_PREFIX, type SessionLog, type StoredCall } from '../log/index.js'
import { isDurableTool, validateNow } from '../tool/index.js'
import { dryReplay, type ReplayEnd } from './dryReplay.js'
import { checkParkedSteps, openWaitNames, retryingStepNames } from './parkedSteps.js'

/** What a deploy would break, by kind (docs/deploys.md, "What check-deploy reports"). */
export type DeployProblemCode =
  | 'unknown_harness'
  | 'unknown_tool'
  | 'legacy_not_begun'
  | 'invalid_tool_input'
  | 'step_not_reached'
  | 'wait_changed'
  | 'answer_refused'
  | 'answer_schema_changed'
  | 'replay_threw'

/** One piece of open work the new code would break: the session, the call and step or question, and why. */
export interface DeployProblem {
  code: DeployProblemCode
  sessionId: string
  toolCallId?: string
  tool?: string
  step?: string
  questionId?: string
  message: string
}

/** A call the check looks at: its stored state and steps, and the tool and input its logged record holds. */
export interface CheckedCall extends StoredCall {
  name: string
  input: unknown
  inputTooLarge?: number
  context?: unknown
}

/** What would run again (or be lost) if the new code never reaches a stored step of this value. */
function lostBy(value: unknown): string {
  if (value && typeof value === 'object' && 'wakeAt' in value) return 'the call would sleep again from the start'
  if (value && typeof value === 'object' && 'questionId' in value) return 'its answer would be ignored and the question asked again'
  return 'its side effect would run again under a new idempotency key'
}

function whereItEnds(end: ReplayEnd): string {
  if (end.kind === 'threw') return ` (it throws first: ${end.message})`
  if (end.kind === 'stopped' && end.why === 'new step') return ` (it stops at step \`${end.step}\`, which the log does not have)`
  if (end.kind === 'stopped' && end.why === 'waits') return ` (it waits at step \`${end.step}\` first)`
  return ''
}

/**
 * Checks one open call against the new harness: its tool exists (or is a legacy tool of a call that
 * began under another version), its input passes the new input schema, and a dry replay of the new
 * code reaches every stored step and accepts the stored answers. No step's fn runs.
 */
export async function checkCall(log: SessionLog, harness: Harness, call: CheckedCall): Promise<DeployProblem[]> {
  const at = { sessionId: log.sessionId, toolCallId: call.toolCallId, tool: call.name }
  const tool = toolOfCall(harness, call.name, call.state ? (call.state.version ?? '') : undefined)
  if (!tool) {
    const legacy = !call.state && harness[LEGACY_TOOLS]?.has(call.name)
    const message = legacy
      ? `tool \`${call.name}\` is only in legacyTools and this call has not begun: it would land unknown_tool (legacy tools run only calls that began under an older version)`
      : `tool \`${call.name}\` is not in the new harness "${harness.name}" (nor in legacyTools): the call would land unknown_tool`
    return [{ code: legacy ? 'legacy_not_begun' : 'unknown_tool', ...at, message }]
  }
  if (call.inputTooLarge !== undefined) return []
  const checked = await validateNow(tool.inputSchema, call.input)
  if (!checked.ok)
    return [{ code: 'invalid_tool_input', ...at, message: `the new input schema refuses the stored input: ${checked.message}` }]
  const stored = [...call.steps.keys()].filter((name) => !name.startsWith(RESERVED_PREFIX))
  const parked = openWaitNames(call).length + retryingStepNames(call).length
  if (!isDurableTool(tool) || stored.length + parked === 0) return []
  const replay = await dryReplay(tool, checked.value, { ...call, context: call.context }, log)
  const problems: DeployProblem[] = replay.questions.map((q) => ({
    code: q.message.startsWith('the new code refuses') ? 'answer_refused' : 'answer_schema_changed',
    ...at,
    step: q.step,
    questionId: q.questionId,
    message: `question \`${q.step}\`: ${q.message}`,
  }))
  for (const name of stored.filter((s) => !replay.reached.has(s)))
    problems.push({
      code: 'step_not_reached',
      ...at,
      step: name,
      message: `stored step \`${name}\` is never reached by the new code${whereItEnds(replay.end)}: ${lostBy(call.steps.get(name))}`,
    })
  for (const { code, step, message } of await checkParkedSteps(log, call, replay, whereItEnds(replay.end)))
    problems.push({ code, ...at, step, message })
  if (replay.end.kind === 'threw' && problems.length === 0)
    problems.push({ code: 'replay_threw', ...at, message: `the new code throws when replayed from storage: ${replay.end.message}` })
  return problems
}
