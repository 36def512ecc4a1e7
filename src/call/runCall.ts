import { FencedError, InvalidToolInputError, UnknownToolError, ValueTooLargeError } from '../errors/index.js'
import { toolNames, toolOfCall, type Harness } from '../core/index.js'
import { budgetsLeft, type BeginResult, type SessionLog, type ToolErrorPayload } from '../log/index.js'
import { createFanout, type AgentHost } from '../fanout/index.js'
import type { HarnessQueues } from '../queue/index.js'
import {
  createDurableContext,
  customEvents,
  DURABLE,
  isDurableTool,
  toToolError,
  validateNow,
  type AttemptHold,
  type AttemptSignal,
  type Park,
  type RetryPolicy,
  type SecretStore,
} from '../tool/index.js'

export type CallOutcome = { result: unknown } | { error: ToolErrorPayload } | { park: Park }

export interface CallInput {
  sessionId: string
  toolCallId: string
  name: string
  input: unknown
  /** The model's input was this many bytes, over the limit (it was not kept). */
  inputTooLarge?: number
  /** The context of the turn's input (`prompt(text, { context })`): the tool's `ctx.context`. */
  context?: unknown
}

/**
 * Runs one attempt of a call: validates the input, runs the durable execute (or a plain tool's
 * execute) and returns its outcome. Parks, fencing and a lost lock pass through; every other error
 * becomes a tool error, so a tool job never fails. The tool starts only once `hold` is confirmed.
 */
export async function runCall(
  harness: Harness,
  log: SessionLog,
  call: CallInput,
  begin: BeginResult,
  secrets: SecretStore,
  abort: AttemptSignal,
  hold?: AttemptHold,
  fanout?: { queues: HarnessQueues; logFor(sessionId: string): SessionLog; agents?: AgentHost | undefined },
): Promise<CallOutcome> {
  const tool = toolOfCall(harness, call.name, begin.version ?? '')
  if (!tool) return { error: toToolError(new UnknownToolError(call.name, toolNames(harness))) }
  if (call.inputTooLarge !== undefined) {
    return {
      error: toToolError(new ValueTooLargeError(`Input of tool "${call.name}"`, call.inputTooLarge, harness.durability.maxValueBytes)),
    }
  }
  const validated = validateNow(tool.inputSchema, call.input)
  const checked = validated instanceof Promise ? await validated : validated
  if (!checked.ok) return { error: toToolError(new InvalidToolInputError(call.name, checked.message)) }
  const input = checked.value
  // the tool's ctx: its abortSignal is made when the tool reads it (callAborts.ts)
  const ctx = {
    toolCallId: call.toolCallId,
    get abortSignal() {
      return abort.signal
    },
    context: call.context,
    emitCustomEvent: customEvents(
      log,
      { label: `tool "${call.name}"`, toolCallId: call.toolCallId },
      secrets,
      harness.durability.maxValueBytes,
    ),
  }
  // outside the try: a lost lock (or the failed write confirming it) is never the tool's error
  const held = hold?.confirm()
  if (held) await held
  if (!isDurableTool(tool)) {
    try {
      return { result: await tool.execute?.(input, ctx) }
    } catch (error) {
      return { error: toToolError(error) }
    }
  }
  const handle = stepContext(harness, log, call.toolCallId, begin, secrets, abort, tool[DURABLE].retry, hold)
  // ctx.tools and ctx.agents: children of this call (docs/fan-out.md), made only where there are queues to start them on
  const children = fanout ? createFanout({ harness, log, parentId: call.toolCallId, ...fanout }) : undefined
  const parkOf = () => handle.parked ?? children?.parked
  try {
    // ctx.budget(): the budgets of the call's turn (docs/spend.md), read when the tool asks
    const budget = () => budgetsLeft(harness, log, begin.input ?? null)
    const fields = { ...handle.fields, budget, ...(children ? { tools: children.tools, agents: children.agents } : {}) }
    const result = await tool[DURABLE].execute(input, Object.assign(ctx, fields))
    const flushing = handle.flush()
    if (flushing) await flushing
    if (handle.failure) throw handle.failure
    // a tool that caught the LockLostError of its step: the attempt still ends as lost
    if (hold?.lost) throw hold.lost
    const parked = parkOf()
    return parked ? { park: parked } : { result }
  } catch (error) {
    // a write of ours failed: not the tool's error; the job fails and the call is picked up again as a cut
    if (handle.failure) throw handle.failure
    if (hold?.lost) throw hold.lost
    const parked = parkOf()
    if (parked) return { park: parked }
    if (isFenced(error)) throw error
    await handle.flush()?.catch(() => {})
    if (handle.failure) throw handle.failure
    return { error: toToolError(error) }
  }
}

/** The step context of this attempt of a call: its fence is the attempt's epoch. */
export function stepContext(
  harness: Harness,
  log: SessionLog,
  toolCallId: string,
  begin: BeginResult,
  secrets: SecretStore,
  abort?: AttemptSignal,
  retry?: RetryPolicy,
  hold?: AttemptHold,
) {
  return createDurableContext({
    log,
    fence: { toolCallId, epoch: begin.epoch },
    secrets,
    maxValueBytes: harness.durability.maxValueBytes,
    fresh: begin.kind === 'fresh',
    version: begin.version,
    harness: harness.name,
    abort,
    // the tool's default retry policy of its steps (R16)
    retry,
    hold,
  })
}

/** `instanceof` on what a tool threw, which may be a Proxy whose getPrototypeOf trap throws. */
function isFenced(error: unknown): boolean {
  try {
    return error instanceof FencedError
  } catch {
    return false
  }
}
