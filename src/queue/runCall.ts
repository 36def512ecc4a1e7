import { FencedError, InvalidToolInputError, UnknownToolError, ValueTooLargeError } from '../errors.js'
import type { BeginResult, SessionLog, ToolErrorPayload } from '../log/index.js'
import { createDurableContext, DURABLE, encodeChecked, isDurableTool, Park, toJsonCopy, toToolError, validateStandard, SecretStore } from '../tool/index.js'
import type { AfterToolCallInfo, RuntimeHarness } from './runtime.js'

export type CallOutcome = { result: unknown } | { error: ToolErrorPayload } | { park: Park }

export interface CallInput {
  sessionId: string
  toolCallId: string
  name: string
  input: unknown
  /** The model's input was this many bytes, over the limit (it was not kept). */
  inputTooLarge?: number
}

/** The session's secrets from the harness resolver (user code: it runs in the worker, or the answering process). */
export async function resolveSecrets(harness: RuntimeHarness, sessionId: string): Promise<SecretStore> {
  return new SecretStore(harness.secrets ? await harness.secrets({ sessionId, harness: harness.name }) : {})
}

export { toToolError }

/**
 * Runs one attempt of a call: validates the input, runs the durable execute (or a plain tool's
 * execute) and returns its outcome. Parks and fencing pass through; every other error becomes a tool
 * error, so a tool job never fails.
 */
export async function runCall(
  harness: RuntimeHarness,
  log: SessionLog,
  call: CallInput,
  begin: BeginResult,
  secrets: SecretStore,
  abortSignal: AbortSignal,
): Promise<CallOutcome> {
  const tool = harness.toolsByName.get(call.name)
  if (!tool) return { error: toToolError(new UnknownToolError(call.name, [...harness.toolsByName.keys()])) }
  if (call.inputTooLarge !== undefined) {
    return { error: toToolError(new ValueTooLargeError(`Input of tool "${call.name}"`, call.inputTooLarge, harness.durability.maxValueBytes)) }
  }
  let input = call.input
  const schema = tool.inputSchema as { '~standard'?: unknown } | undefined
  if (schema && typeof schema === 'object' && '~standard' in schema) {
    const checked = await validateStandard(schema as never, call.input)
    if (!checked.ok) return { error: toToolError(new InvalidToolInputError(call.name, checked.message)) }
    input = checked.value
  }
  const base = { toolCallId: call.toolCallId, abortSignal, context: undefined, emitCustomEvent: () => {} }
  if (!isDurableTool(tool)) {
    try {
      return { result: await tool.execute?.(input, base) }
    } catch (error) {
      return { error: toToolError(error) }
    }
  }
  const handle = createDurableContext({
    log,
    fence: { toolCallId: call.toolCallId, epoch: begin.epoch },
    secrets,
    maxValueBytes: harness.durability.maxValueBytes,
    fresh: begin.kind === 'fresh',
    abortSignal,
  })
  try {
    const result = await tool[DURABLE].execute(input, { ...base, ...handle.fields })
    await handle.flush()
    if (handle.failure) throw handle.failure
    return handle.parked ? { park: handle.parked } : { result }
  } catch (error) {
    // a write of ours failed: not the tool's error; the job fails and the call is picked up again as a cut
    if (handle.failure) throw handle.failure
    if (handle.parked) return { park: handle.parked }
    if (isFenced(error)) throw error
    await handle.flush().catch(() => {})
    if (handle.failure) throw handle.failure
    return { error: toToolError(error) }
  }
}

/** `instanceof` on what a tool threw, which may be a Proxy whose getPrototypeOf trap throws. */
function isFenced(error: unknown): boolean {
  try {
    return error instanceof FencedError
  } catch {
    return false
  }
}

/**
 * The kept result (R12): the outcome after every onAfterToolCall hook, made JSON and without session
 * secrets. A hook's replacement wins, also on an error; a hook that throws makes the result a tool error.
 */
export async function keptResult(
  harness: RuntimeHarness,
  call: CallInput,
  outcome: { result: unknown } | { error: ToolErrorPayload },
  secrets: SecretStore,
): Promise<{ result: unknown } | { error: ToolErrorPayload }> {
  let kept = outcome
  for (const hook of harness.hooks.onAfterToolCall) {
    const info: AfterToolCallInfo = { sessionId: call.sessionId, toolCallId: call.toolCallId, name: call.name, input: call.input, ...kept }
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
      kept = { result: copy }
    } catch (error) {
      kept = { error: toToolError(error) }
    }
  }
  return secrets.redact(kept)
}
