import { DurableHarnessError, FencedError, InvalidToolInputError, UnknownToolError } from '../errors.js'
import type { BeginResult, SessionLog, ToolErrorPayload } from '../log/index.js'
import { createDurableContext, DURABLE, isDurableTool, Park, toJsonCopy, validateStandard, SecretStore } from '../tool/index.js'
import type { AfterToolCallInfo, RuntimeHarness } from './runtime.js'

export type CallOutcome = { result: unknown } | { error: ToolErrorPayload } | { park: Park }

export interface CallInput {
  sessionId: string
  toolCallId: string
  name: string
  input: unknown
}

/** The session's secrets from the harness resolver (user code: it runs in the worker, or the answering process). */
export async function resolveSecrets(harness: RuntimeHarness, sessionId: string): Promise<SecretStore> {
  return new SecretStore(harness.secrets ? await harness.secrets({ sessionId, harness: harness.name }) : {})
}

/** Turns anything a tool threw into the error payload the model reads. */
export function toToolError(error: unknown): ToolErrorPayload {
  if (error instanceof DurableHarnessError) return { message: error.message, code: error.code }
  if (error instanceof Error) return { message: error.message || error.name }
  return { message: String(error) }
}

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
  })
  try {
    const result = await tool[DURABLE].execute(input, { ...base, ...handle.fields })
    await handle.flush()
    return handle.parked ? { park: handle.parked } : { result }
  } catch (error) {
    if (handle.parked) return { park: handle.parked }
    if (error instanceof FencedError) throw error
    await handle.flush()
    return { error: toToolError(error) }
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
    try {
      kept = { result: toJsonCopy(kept.result, `Result of tool "${call.name}"`) }
    } catch (error) {
      kept = { error: toToolError(error) }
    }
  }
  return secrets.redact(kept)
}
