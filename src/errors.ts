import { redactCredentials } from './credentials.js'

/**
 * Every error the library throws on purpose. Each one says what was wrong and what to do,
 * and carries a stable `code` so callers can branch without parsing messages.
 */
export class DurableHarnessError extends Error {
  readonly code: string
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}

/** A session id or input id that cannot be used in Redis keys, job ids or idempotency keys. */
export class InvalidIdError extends DurableHarnessError {
  constructor(kind: 'session id' | 'input id' | 'tool call id' | 'question id', value: unknown) {
    super(
      'invalid_id',
      `Invalid ${kind} ${describeValue(value)}: use 1 to 200 characters from [A-Za-z0-9._-] ` +
        `(no ':', which separates the parts of an idempotency key, and no control characters).`,
    )
  }
}

/** A log cursor (stream id) that is not of the form `<ms>-<seq>` (or `<ms>`). */
export class InvalidCursorError extends DurableHarnessError {
  constructor(option: string, value: unknown) {
    super('invalid_cursor', `Invalid ${option} ${describeValue(value)}: pass a log entry id such as "1700000000000-0" (the \`id\` of a LogEntry).`)
  }
}

/** JSON for an error message, cut short: a caller's bad value may be huge. */
function describeValue(value: unknown): string {
  let text: string
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value))
  } catch {
    text = `(a ${typeof value})`
  }
  return text.length > 120 ? `${text.slice(0, 120)}…` : text
}

/** A write carried a fencing epoch that is no longer current: a newer attempt owns the call. */
export class FencedError extends DurableHarnessError {
  constructor(
    readonly toolCallId: string,
    readonly epoch: number,
    readonly currentEpoch: number | null,
  ) {
    super(
      'fenced',
      `Tool call ${toolCallId}: attempt epoch ${epoch} was superseded (current epoch ${currentEpoch ?? 'none'}). ` +
        `Another worker owns this call now; this attempt must stop without writing.`,
    )
  }
}

/** A record failed its schema on write. */
export class InvalidRecordError extends DurableHarnessError {
  constructor(message: string) {
    super('invalid_record', message)
  }
}

/** A stream entry that cannot be parsed or fails its schema on read. */
export class MalformedEntryError extends DurableHarnessError {
  constructor(
    readonly sessionId: string,
    readonly entryId: string,
    reason: string,
  ) {
    super(
      'malformed_entry',
      `Session ${sessionId}: log entry ${entryId} is malformed (${reason}). ` +
        `The session is marked; inspect the entry with XRANGE and remove or repair it.`,
    )
  }
}

/** A step value, append record or answer that is not plain JSON. */
export class NotJsonError extends DurableHarnessError {
  constructor(what: string, path: string, found: string) {
    super(
      'not_json',
      `${what} must be JSON, but ${path} is ${found}. Convert it first ` +
        `(for a Date return date.toISOString(); for a Map, Object.fromEntries(map)).`,
    )
  }
}

/** A value over the configured size limit. */
export class ValueTooLargeError extends DurableHarnessError {
  constructor(what: string, size: number, limit: number) {
    super(
      'value_too_large',
      `${what} is ${size} bytes as JSON, over the limit of ${limit} bytes. ` +
        `Store big data elsewhere and return its id.`,
    )
  }
}

/** The same step name used twice in one tool call. */
export class DuplicateStepError extends DurableHarnessError {
  constructor(toolCallId: string, name: string) {
    super(
      'duplicate_step',
      `Step "${name}" is used twice in tool call ${toolCallId}. Give each step a name that is ` +
        `unique within the call and the same on every run, for example charge:\${orderId}.`,
    )
  }
}

/** A session secret found in a value that would be stored. */
export class SecretInValueError extends DurableHarnessError {
  constructor(what: string, secretName: string, hint = 'Read the secret outside step.do and return an id, not a token.') {
    super('secret_in_value', `${what} holds the session secret ${secretName}; the log must not keep it. ${hint}`)
  }
}

/** A record type that starts with the reserved `harness.` prefix, or has no type. */
export class ReservedRecordTypeError extends DurableHarnessError {
  constructor(type: unknown) {
    super(
      'reserved_record_type',
      `Record type ${JSON.stringify(type)} is not allowed: append records need a string type ` +
        `that does not start with "harness." (reserved), for example "app.memory".`,
    )
  }
}

/** step.ask or append used outside a durable session (e.g. plain chat()). */
export class DurableSessionRequiredError extends DurableHarnessError {
  constructor(what: string) {
    super(
      'durable_session_required',
      `${what} needs a durable session: there is no session log to hold it in plain chat(). ` +
        `Run the tool through a harness (defineHarness + createHarnessHost).`,
    )
  }
}

/** A duration or wake time that is negative, not a number, or over 365 days. */
export class InvalidDurationError extends DurableHarnessError {
  constructor(value: unknown, why: string) {
    super(
      'invalid_duration',
      `Invalid sleep ${JSON.stringify(value)}: ${why}. Use ms (a number) or '90s', '15m', '2h', '3d', up to 365 days.`,
    )
  }
}

/** An answer that fails the question's schema; nothing was logged. */
export class InvalidAnswerError extends DurableHarnessError {
  constructor(questionId: string, detail: string) {
    super('invalid_answer', `Answer to question ${questionId} was refused: ${detail}. Nothing was logged; send a valid answer.`)
  }
}

/** An answer to a question that does not exist, was answered already, or expired. */
export class QuestionClosedError extends DurableHarnessError {
  constructor(questionId: string, reason: 'unknown' | 'answered' | 'expired') {
    const why = {
      unknown: 'no such open question in this session',
      answered: 'it was answered already (the first valid answer wins)',
      expired: 'it expired',
    }[reason]
    super(`question_${reason}`, `Cannot answer question ${questionId}: ${why}.`)
  }
}

/** Thrown inside the tool when a step.ask question expires unanswered. */
export class QuestionExpiredError extends DurableHarnessError {
  constructor(readonly questionId: string, readonly expiresAt: string) {
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
    super(
      'input_conflict',
      `Input ${inputId} was already sent with a different text. An inputId names one input; use a new inputId.`,
    )
  }
}

/** An inputId this session never received. */
export class UnknownInputError extends DurableHarnessError {
  constructor(inputId: string) {
    super('unknown_input', `No input ${inputId} in this session: prompt it first, or check the session id.`)
  }
}

/** Redis could not be reached at start. */
export class RedisUnavailableError extends DurableHarnessError {
  constructor(url: string, cause?: unknown) {
    super(
      'redis_unavailable',
      `Cannot reach Redis at ${redactCredentials(url)}. Start one (docker compose up -d redis) or set REDIS_URL.`,
      { cause },
    )
  }
}

/** Redis refused the credentials at start (WRONGPASS, NOAUTH). */
export class RedisAuthError extends DurableHarnessError {
  constructor(url: string, reply: string) {
    // no `cause`: ioredis errors carry the AUTH arguments, so printing one would print the password
    super(
      'redis_auth_failed',
      `Redis at ${redactCredentials(url)}: authentication failed (${redactCredentials(reply)}). ` +
        `Check the user and password in REDIS_URL.`,
    )
  }
}

/** A harness used with a host that was not given it. */
export class UnknownHarnessError extends DurableHarnessError {
  constructor(name: string) {
    super('unknown_harness', `Harness "${name}" is not registered with this host: pass it in createHarnessHost({ harnesses }).`)
  }
}

/** Wrong options given to a public function. */
export class ConfigError extends DurableHarnessError {
  constructor(message: string) {
    super('config', message)
  }
}

/** runTool's rejection: the call's kept result is a tool error. */
export class ToolCallError extends DurableHarnessError {
  constructor(
    readonly toolName: string,
    readonly toolCallId: string,
    readonly toolError: { message: string; code?: string },
  ) {
    super(toolError.code ?? 'tool_error', `Tool "${toolName}" (call ${toolCallId}) failed: ${toolError.message}`)
  }
}

/** A wait (settled, runTool) that did not finish within the caller's timeout; the work goes on. */
export class WaitTimeoutError extends DurableHarnessError {
  constructor(what: string, timeoutMs: number) {
    super('wait_timeout', `${what} did not finish within ${timeoutMs} ms. The work goes on durably; wait again or read the session log.`)
  }
}

/**
 * One of our Redis operations failed (Redis refused it, e.g. OOM, or the connection failed). The
 * cause is attached. A tool call's own writes are retried first; if they still fail the job fails and
 * the call is picked up again and classified as a cut, never landed as the tool's error.
 */
export class StorageError extends DurableHarnessError {
  constructor(
    readonly operation: string,
    readonly sessionId: string,
    cause: unknown,
  ) {
    super(
      'storage_error',
      `Redis failed ${operation} in session ${sessionId}: ${causeText(cause)}. Nothing of it is half-written ` +
        `(each write is one atomic script); check Redis (memory, connection) and retry.`,
      { cause },
    )
  }
}

function causeText(cause: unknown): string {
  try {
    return cause instanceof Error ? cause.message : String(cause)
  } catch {
    return 'an error that cannot be described'
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
