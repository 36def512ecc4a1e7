// Errors of sessions, turns and tool calls as callers and tools see them.
import { causeText, DurableHarnessError, isDurableHarnessErrorCode } from './base.js'

/** An answer that fails the question's schema; nothing was logged. */
export class InvalidAnswerError extends DurableHarnessError {
  constructor(questionId: string, detail: string) {
    super('invalid_answer', `Answer to question ${questionId} was refused: ${detail}. Nothing was logged; send a valid answer.`)
  }
}

/** An answer to a question that does not exist, was answered already, or expired. */
export class QuestionClosedError extends DurableHarnessError {
  constructor(questionId: string, reason: 'unknown' | 'answered' | 'expired' | 'closed') {
    const why = {
      unknown: 'no such open question in this session',
      answered: 'it was answered already (the first valid answer wins)',
      expired: 'it expired',
      closed: 'it was closed: its call was cancelled (its turn was aborted)',
    }[reason]
    super(`question_${reason}`, `Cannot answer question ${questionId}: ${why}.`)
  }
}

/** Thrown inside the tool when a step.ask question expires unanswered. */
export class QuestionExpiredError extends DurableHarnessError {
  constructor(
    readonly questionId: string,
    readonly expiresAt: string,
  ) {
    super('question_expired', `Question ${questionId} expired at ${expiresAt} without an answer.`)
  }
}

/** A tool name the harness does not know. */
export class UnknownToolError extends DurableHarnessError {
  constructor(name: string, known: string[]) {
    super('unknown_tool', `Unknown tool "${name}". This harness has: ${known.join(', ') || '(none)'}.`)
  }
}

/** Tool input that fails the tool's input schema. */
export class InvalidToolInputError extends DurableHarnessError {
  constructor(name: string, detail: string) {
    super('invalid_tool_input', `Invalid input for tool "${name}": ${detail}`)
  }
}

/** The same inputId used with a different text. */
export class InputConflictError extends DurableHarnessError {
  constructor(inputId: string) {
    super('input_conflict', `Input ${inputId} was already sent with a different text. An inputId names one input; use a new inputId.`)
  }
}

/** An inputId this session never received. */
export class UnknownInputError extends DurableHarnessError {
  constructor(inputId: string) {
    super('unknown_input', `No input ${inputId} in this session: prompt it first, or check the session id.`)
  }
}

/**
 * runTool's rejection: the call's kept result is a tool error (`toolError`, its code as the tool set
 * it). `code` is that code when it is one of the library's, else `tool_error`.
 */
export class ToolCallError extends DurableHarnessError {
  constructor(
    readonly toolName: string,
    readonly toolCallId: string,
    readonly toolError: { message: string; code?: string },
  ) {
    super(
      isDurableHarnessErrorCode(toolError.code) ? toolError.code : 'tool_error',
      `Tool "${toolName}" (call ${toolCallId}) failed: ${toolError.message}`,
    )
  }
}

/** runTool with a toolCallId that names another call (another tool, or another input). */
export class ToolCallConflictError extends DurableHarnessError {
  constructor(toolCallId: string) {
    super(
      'tool_call_conflict',
      `Tool call ${toolCallId} was already made with another tool or another input. A toolCallId names one ` +
        `call; use a new toolCallId (or none: runTool makes one).`,
    )
  }
}

/** A wait on a tool call this session never received. */
export class UnknownToolCallError extends DurableHarnessError {
  constructor(toolCallId: string) {
    super('unknown_tool_call', `No tool call ${toolCallId} in this session: check the session id and the toolCallId.`)
  }
}

/**
 * A tool job that names a call no model response or runTool request of its session holds (a job added
 * by hand, e.g. in bull-board): nothing runs and nothing is written; the job fails.
 */
export class CallNotLoggedError extends DurableHarnessError {
  constructor(sessionId: string, toolCallId: string) {
    super(
      'call_not_logged',
      `Session ${sessionId} has no logged tool call ${JSON.stringify(toolCallId)} (no model response or runTool request holds it), so its job runs nothing. ` +
        'Tool jobs are added by the harness (a turn, session.runTool), not by hand.',
    )
  }
}

/** The reason ctx.abortSignal carries when a tool call ran past its time limit. */
export class ToolTimeoutError extends DurableHarnessError {
  constructor(
    readonly toolName: string,
    readonly timeoutMs: number,
  ) {
    super(
      'timeout',
      `Tool "${toolName}" did not finish within ${timeoutMs} ms (durability.toolTimeoutMs or the tool's timeoutMs). ` +
        `The call ended with this error; anything the attempt writes later is refused.`,
    )
  }
}

/** A wait (settled, runTool) that did not finish within the caller's timeout; the work goes on. */
export class WaitTimeoutError extends DurableHarnessError {
  constructor(what: string, timeoutMs: number) {
    super('wait_timeout', `${what} did not finish within ${timeoutMs} ms. The work goes on durably; wait again or read the session log.`)
  }
}

/** A harness used with a host that was not given it. */
export class UnknownHarnessError extends DurableHarnessError {
  constructor(name: string) {
    super('unknown_harness', `Harness "${name}" is not registered with this host: pass it in createHarnessHost({ harnesses }).`)
  }
}

/** A prompt to a session whose turn is running, with the harness's `busy: 'reject'`; nothing was written. */
export class SessionBusyError extends DurableHarnessError {
  constructor(
    readonly sessionId: string,
    readonly runningInputId: string,
  ) {
    super(
      'session_busy',
      `Session ${sessionId} is busy with input ${runningInputId}; this harness rejects prompts to a busy session (busy: 'reject'). ` +
        `Wait for that turn to settle (session.settled), or use busy: 'queue' or 'steer'.`,
    )
  }
}

/**
 * A middleware's `onConfig` offered the model a tool the harness cannot run durably (`reason`):
 * `'unknown'`, a tool not in `defineHarness({ tools })` (a tool call runs in a tool worker that finds
 * its tool by name there; an object made in one turn worker's onConfig is not there); or `'agent'`, a
 * wrapped `execute` of an agent tool (its call runs a child session, no execute a wrapper could run
 * around). The turn fails with this error (code `middleware_tool`) before the model call. A wrapped
 * `execute` of any other harness tool is run (docs/harness.md, Middleware).
 */
export class MiddlewareToolError extends DurableHarnessError {
  constructor(
    readonly middleware: string,
    readonly tool: string,
    known: string[],
    readonly reason: 'unknown' | 'agent' = 'unknown',
  ) {
    super(
      'middleware_tool',
      reason === 'agent'
        ? `Middleware ${JSON.stringify(middleware)} onConfig wraps the execute of agent tool ${JSON.stringify(tool)}. An agent tool's call runs its harness as a child ` +
            `session, not an execute, so no wrapper can run around it. Return agent tools from onConfig as they came (wrap the others), and put what the wrapper ` +
            `does in the child harness's own middleware.`
        : `Middleware ${JSON.stringify(middleware)} onConfig offered the model tool ${JSON.stringify(tool)}, which is not one of this harness's tools ` +
            `(this harness has: ${known.join(', ') || '(none)'}). A tool call runs in a tool worker, maybe another process or after a crash, that finds its tool ` +
            `by name among defineHarness({ tools }); a tool made in onConfig exists only in this turn worker. List the tool in defineHarness({ tools }) and ` +
            `let onConfig choose among them (filter, reorder); wrapping a harness tool's execute ({ ...tool, execute }) is run around the durable tool.`,
    )
  }
}

/**
 * A middleware's wrapper of a tool's `execute` (returned by `onConfig`) ran the tool's execute a
 * second time in one attempt. A durable tool runs once an attempt: a second run would redo work
 * nobody asked for and make its steps answer from the first run. The second run throws this error
 * to the wrapper, and the call lands it as its tool error (code `middleware_execute`) whatever the
 * wrapper returns. Retries belong in `step.do` (a retry policy), or to the model.
 */
export class MiddlewareExecuteError extends DurableHarnessError {
  constructor(
    readonly tool: string,
    readonly wrappedBy: string[],
  ) {
    super(
      'middleware_execute',
      `The wrapper of tool ${JSON.stringify(tool)} (from the onConfig of middleware ${wrappedBy.map((m) => JSON.stringify(m)).join(', ')}) ran the tool's execute ` +
        `a second time in one attempt. A durable tool runs once an attempt (a crash runs it again, its kept steps replayed): call execute once in the wrapper, ` +
        `and retry inside the tool with step.do's retry policy instead.`,
    )
  }
}

/**
 * A limit's `key` function (defineHarness `limits`) threw or returned no string for a call or a
 * turn. The call lands this as its tool error (code `limit_key`) without running; a turn fails.
 */
export class LimitKeyError extends DurableHarnessError {
  constructor(
    readonly scope: string,
    reason: string,
  ) {
    super(
      'limit_key',
      `The key function of limit ${JSON.stringify(scope)} ${reason}. It must return a non-empty string of at most ${MAX_LIMIT_KEY_LENGTH} ` +
        `characters (a tenant, a user, a provider host) for every input; the call did not run. Fix the function in defineHarness({ limits }).`,
    )
  }
}

/** The longest key a limit's key function may return. */
export const MAX_LIMIT_KEY_LENGTH = 200

/**
 * `session.compact()` (HTTP `POST control { op: 'compact' }`, `harness compact`) could not compact:
 * its summary call failed and `turn.onModelError` gave up (or asked for a wait over a minute), or the
 * strategy threw. Nothing was logged; `cause` is the error. The turns compact on their own at their
 * next model call over the budget.
 */
export class CompactionFailedError extends DurableHarnessError {
  constructor(
    readonly sessionId: string,
    cause: unknown,
  ) {
    super('compaction_failed', `Session ${sessionId}: the compaction failed, nothing was logged: ${causeText(cause)}`, { cause })
  }
}

/**
 * A budget (`defineHarness({ budgets })`, docs/spend.md) refused a model call: its scope's spend and
 * the calls in flight, plus this call's estimate, would pass the ceiling. A turn whose budget says
 * `onExceeded: 'fail'` settles failed with it (code `budget_exceeded`); with `'pause'` it waits for
 * `session.resume` after the budget is raised. Amounts are in USD for `cost`.
 */
export class BudgetExceededError extends DurableHarnessError {
  constructor(
    readonly scope: 'session' | 'tree' | 'principal',
    readonly metric: 'cost' | 'tokens' | 'calls',
    readonly figures: { max: number; spent: number; held: number; estimate: number },
  ) {
    const unit = (n: number) => (metric === 'cost' ? `$${n.toFixed(6)}` : `${n} ${metric}`)
    super(
      'budget_exceeded',
      `The ${scope} budget's ${metric} ceiling of ${unit(figures.max)} would be passed: ${unit(figures.spent)} spent, ` +
        `${unit(figures.held)} held by calls in flight, and ${unit(figures.estimate)} reserved for this model call. ` +
        `Raise budgets.${scope} in defineHarness (then session.resume a paused turn), or wait for the next period of a principal budget.`,
    )
  }
}
