import { toolOf, type AfterToolCallInfo, type Harness } from '../core/index.js'
import type { ToolErrorPayload } from '../log/index.js'
import { encodeChecked, toJsonCopy, toToolError, validateNow, type SecretStore } from '../tool/index.js'
import { toolCallOf } from './middleware.js'
import type { CallInput } from './runCall.js'

type Checked = { result: unknown } | { error: ToolErrorPayload }

/**
 * A tool's `outputSchema` (TanStack's option) checks its result: one that fails it is a tool error.
 * No promise when the check needs none (no schema, or a synchronous one: validateNow).
 */
function checkOutput(harness: Harness, name: string, result: unknown): Checked | Promise<Checked> {
  const verdict = (checked: Awaited<ReturnType<typeof validateNow>>): Checked =>
    checked.ok
      ? { result }
      : { error: { code: 'invalid_tool_output', message: `Result of tool "${name}" does not fit its outputSchema: ${checked.message}` } }
  const validated = validateNow(toolOf(harness, name)?.outputSchema, result)
  return validated instanceof Promise ? validated.then(verdict) : verdict(validated)
}

/**
 * The kept result (R12): the outcome after every onAfterToolCall hook, made JSON and without session
 * secrets. A hook's replacement wins, also on an error; a hook that throws makes the result a tool error.
 * `duration`: how long the landing attempt ran the tool (TanStack's AfterToolCallInfo field).
 */
export async function keptResult(
  harness: Harness,
  call: CallInput,
  outcome: { result: unknown } | { error: ToolErrorPayload },
  secrets: SecretStore,
  duration: number,
): Promise<{ result: unknown } | { error: ToolErrorPayload }> {
  let kept = outcome
  let toolCall: ReturnType<typeof toolCallOf> | undefined
  for (const hook of harness.hooks.onAfterToolCall) {
    toolCall ??= toolCallOf(call)
    const info: AfterToolCallInfo = {
      sessionId: call.sessionId,
      toolCallId: call.toolCallId,
      name: call.name,
      toolName: call.name,
      toolCall,
      input: call.input,
      ok: 'result' in kept,
      duration,
      ...kept,
    }
    try {
      const decision = await hook(info)
      if (decision && decision.type === 'replaceResult') kept = { result: decision.result }
    } catch (error) {
      kept = { error: { message: `onAfterToolCall hook failed: ${toToolError(error).message}` } }
    }
  }
  if ('result' in kept) {
    const what = `Result of tool "${call.name}"`
    try {
      const copy = toJsonCopy(kept.result, what)
      encodeChecked(copy, what, harness.durability.maxValueBytes)
      const checked = checkOutput(harness, call.name, copy)
      kept = checked instanceof Promise ? await checked : checked
    } catch (error) {
      kept = { error: toToolError(error) }
    }
  }
  return secrets.redact(kept)
}
