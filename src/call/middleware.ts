import type { AfterToolCallInfo, BeforeToolCallDecision, ToolCall, ToolExecutionContext } from '@tanstack/ai'
import { toolOf, type Harness } from '../core/index.js'
import type { Fence, SessionLog } from '../log/index.js'
import {
  customEvents,
  hookRecords,
  middlewareRun,
  provideLogRecords,
  toToolError,
  validateNow,
  type AttemptHold,
  type AttemptSignal,
  type SecretStore,
} from '../tool/index.js'
import type { CallInput, CallOutcome } from './runCall.js'
import { BoundTool, bindWrapper, type ToolWrapper } from './wrappedExecute.js'

/** The call as TanStack's hooks get it: our stored toolCallId, the input as JSON text. */
export function toolCallOf(call: { toolCallId: string; name: string; input: unknown }): ToolCall {
  return { id: call.toolCallId, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.input ?? {}) } }
}

/** The attempt the middleware runs around: its abort (a hook's ctx.abort aborts it), its fence and its lock. */
interface AttemptAround {
  abort: AttemptSignal & { abort(reason: Error): void }
  fence: Fence
  hold?: AttemptHold | undefined
}

export interface MiddlewareAttempt {
  outcome: CallOutcome
  /** Milliseconds the tool ran in this attempt (0 when it did not run: skip, abort). */
  duration: number
}

/** The attempt's run of the tool (runCall) and its time limit (bounded), apart: a wrapper runs inside the limit, around the run. */
export interface AttemptRun {
  run(input: unknown): Promise<CallOutcome>
  limit(running: Promise<CallOutcome>): Promise<CallOutcome>
}

/**
 * Runs one attempt of a call inside the harness's tool middleware, as chat() does: onBeforeToolCall
 * in order until one decides (`transformArgs`: the tool runs with these args, checked by its schema;
 * `skip`: the tool does not run and the result is the call's; `abort`: a tool error), then the tool
 * (inside the wrapper of its execute that onConfig returned, if any: bound here, wrappedExecute.ts),
 * then onAfterToolCall in order with TanStack's info. In the worker of this attempt: an attempt that
 * parks runs no onAfterToolCall (the attempt that lands does, after running the tool from the top
 * and onBeforeToolCall again); a call whose result is kept is never run again, nor are its hooks.
 * Like chat(), the hooks see the input checked by the tool's schema; an unknown tool, an input over
 * the size limit or one its schema refuses is a tool error with no hook run.
 */
export function runWithMiddleware(
  harness: Harness,
  log: SessionLog,
  call: CallInput & { inputId?: string },
  secrets: SecretStore,
  attempt: AttemptAround,
  tool: AttemptRun,
): Promise<MiddlewareAttempt> {
  // no middleware: the tool's run and its time, one promise
  return harness.middleware.length === 0
    ? timed(() => tool.limit(tool.run(call.input)))
    : withMiddleware(harness, log, call, secrets, attempt, tool)
}

function timed(running: () => Promise<CallOutcome>): Promise<MiddlewareAttempt> {
  const start = Date.now()
  return running().then((outcome) => ({ outcome, duration: Date.now() - start }))
}

async function withMiddleware(
  harness: Harness,
  log: SessionLog,
  call: CallInput & { inputId?: string },
  secrets: SecretStore,
  attempt: AttemptAround,
  { run, limit }: AttemptRun,
): Promise<MiddlewareAttempt> {
  const middleware = harness.middleware.filter((mw) => mw.onBeforeToolCall || mw.onAfterToolCall || mw.onConfig)
  const tool = toolOf(harness, call.name)
  const plain = () => timed(() => limit(run(call.input)))
  if (middleware.length === 0 || !tool || call.inputTooLarge !== undefined) return plain()
  const checked = await validateNow(tool.inputSchema, call.input)
  if (!checked.ok) return plain() // runCall lands the invalid_tool_input error
  const args = checked.value
  let aborted: string | undefined
  const emitCustomEvent = customEvents(
    log,
    { label: `tool "${call.name}"`, toolCallId: call.toolCallId },
    secrets,
    harness.durability.maxValueBytes,
  )
  // setup runs for every middleware (a capability it provides may be what onConfig reads)
  const mwRun = middlewareRun(harness, {
    sessionId: call.sessionId,
    ...(call.inputId ? { inputId: call.inputId } : {}),
    phase: 'beforeTools',
    iteration: 0,
    messages: [],
    signal: attempt.abort.signal,
    context: call.context,
    abort(reason) {
      aborted ??= reason ?? 'Aborted by middleware.'
      attempt.abort.abort(new Error(aborted))
    },
    emitCustomEvent,
  })
  const { ctx } = mwRun
  // getLogRecords(ctx).append: kept here; an attempt that lands stages them after the tool's own
  // records, so they enter the log in the write of its result (R9); one that parks drops them
  const hooked = hookRecords(secrets, harness.durability.maxValueBytes)
  provideLogRecords(ctx, hooked.writer)
  const land = async (landing: MiddlewareAttempt): Promise<MiddlewareAttempt> => {
    if (hooked.records.length > 0)
      await log.calls.stageRecords(attempt.fence, hooked.records, await log.calls.stagedCount(attempt.fence.toolCallId))
    return landing
  }
  const toolCall = toolCallOf(call)
  const failed = (hook: string, error: unknown): MiddlewareAttempt => ({
    outcome: { error: { code: 'middleware_failed', message: `${hook} middleware failed: ${toToolError(error).message}` } },
    duration: 0,
  })
  const abortError = (reason: string): CallOutcome => ({ error: { code: 'aborted_by_middleware', message: reason } })
  let decision: BeforeToolCallDecision
  // the hooks are user code: they start only while the attempt holds its call (outside the try: never a hook's failure)
  const beforeHeld = attempt.hold?.confirm()
  if (beforeHeld) await beforeHeld
  // a wrapper of the tool's execute that onConfig returns: bound around this attempt's run, as chat() binds it
  let wrapped: { bound: BoundTool; wrapper: ToolWrapper } | undefined
  if (middleware.some((mw) => mw.onConfig)) {
    const bound = new BoundTool(tool, run)
    try {
      await mwRun.setup()
      const wrapper = await bindWrapper(harness, ctx, middleware, bound)
      if (wrapper) wrapped = { bound, wrapper }
    } catch (error) {
      return land(failed('onConfig', error))
    }
  }
  try {
    for (const mw of middleware) {
      decision = await mw.onBeforeToolCall?.(ctx, { toolCall, tool, args, toolName: call.name, toolCallId: call.toolCallId })
      if (decision) break
    }
  } catch (error) {
    return land(failed('onBeforeToolCall', error))
  }
  if (aborted !== undefined) return land({ outcome: abortError(aborted), duration: 0 })
  if (decision?.type === 'abort') return land({ outcome: abortError(decision.reason || 'Aborted by middleware.'), duration: 0 })
  // the tool's input: transformArgs's (checked by runCall), else the logged one; a wrapper gets it as chat() gives it, checked
  const transformed = decision?.type === 'transformArgs' ? { args: decision.args } : undefined
  const ran: MiddlewareAttempt =
    decision?.type === 'skip'
      ? { outcome: { result: decision.result }, duration: 0 }
      : await timed(() =>
          limit(
            wrapped
              ? wrapped.bound.outcome(wrapped.wrapper, transformed ? transformed.args : args, toolContext(call, attempt, emitCustomEvent))
              : run(transformed ? transformed.args : call.input),
          ),
        )
  if ('park' in ran.outcome) return ran
  if (aborted !== undefined) return land({ outcome: abortError(aborted), duration: ran.duration })
  ctx.phase = 'afterTools'
  const { outcome } = ran
  const info: AfterToolCallInfo = {
    toolCall,
    tool,
    toolName: call.name,
    toolCallId: call.toolCallId,
    ok: 'result' in outcome,
    duration: ran.duration,
    ...('result' in outcome ? { result: outcome.result } : { error: Object.assign(new Error(outcome.error.message), outcome.error) }),
  }
  const afterHeld = attempt.hold?.confirm()
  if (afterHeld) await afterHeld
  try {
    for (const mw of middleware) await mw.onAfterToolCall?.(ctx, info)
  } catch (error) {
    return land({ ...failed('onAfterToolCall', error), duration: ran.duration })
  }
  return land(ran)
}

/** The ToolExecutionContext a wrapper gets (chat() passes one to execute): the same fields runCall gives the tool. */
function toolContext(
  call: CallInput,
  attempt: AttemptAround,
  emitCustomEvent: ToolExecutionContext['emitCustomEvent'],
): ToolExecutionContext {
  return {
    toolCallId: call.toolCallId,
    // read when the wrapper reads it, as the tool's own (callAborts.ts makes the signal lazily)
    get abortSignal() {
      return attempt.abort.signal
    },
    context: call.context,
    emitCustomEvent,
  }
}
