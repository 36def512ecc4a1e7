/**
 * The `code` of every error the library throws (docs/errors.md). A `ToolCallError` carries the code
 * of its tool error when it is one of these (`invalid_tool_output`, `approval_denied`, a tool's own
 * `DurableHarnessError` ...), else `tool_error`; its `toolError.code` keeps the tool's code as it was.
 */
const DURABLE_HARNESS_ERROR_CODES = [
  // bad input (errors/input.ts)
  'invalid_id',
  'invalid_cursor',
  'not_json',
  'value_too_large',
  'duplicate_step',
  'secret_in_value',
  'reserved_record_type',
  'durable_session_required',
  'invalid_duration',
  'invalid_record',
  'config',
  'usage',
  // sessions, turns and tool calls (errors/session.ts)
  'invalid_answer',
  'question_unknown',
  'question_answered',
  'question_expired',
  'question_closed',
  'unknown_tool',
  'invalid_tool_input',
  'input_conflict',
  'unknown_input',
  'tool_call_conflict',
  'unknown_tool_call',
  'timeout',
  'wait_timeout',
  'unknown_harness',
  'session_busy',
  'call_not_logged',
  'middleware_tool',
  'middleware_execute',
  'limit_key',
  'tree_limit',
  'compaction_failed',
  'budget_exceeded',
  // operator APIs (errors/ops.ts)
  'invalid_tags',
  'invalid_turn_filter',
  'rerun_call',
  'fork_refused',
  // step retries (errors/retry.ts; RetryAfterError: tool/retryAfter.ts)
  'non_retryable',
  'retry_after',
  'step_retries_exhausted',
  // machine events and schedules (errors/events.ts)
  'event_timeout',
  'invalid_event_payload',
  'invalid_event_address',
  'invalid_schedule',
  // the log and Redis (errors/storage.ts)
  'fenced',
  'lock_lost',
  'malformed_entry',
  'storage_error',
  'redis_unavailable',
  'redis_auth_failed',
  // encryption at rest (errors/codec.ts)
  'codec_key_missing',
  'codec_decode_failed',
  'codec_missing',
  // a ToolCallError: the library's own tool error codes, or tool_error for a code of the tool's
  'tool_error',
  'interrupted',
  'aborted',
  'cancelled',
  'approval_denied',
  'approval_expired',
  'invalid_tool_output',
  'secrets_unavailable',
  'middleware_failed',
  'aborted_by_middleware',
] as const

/** The `code` of a `DurableHarnessError`: switch on it after `isDurableHarnessError(e)`. */
export type DurableHarnessErrorCode = (typeof DURABLE_HARNESS_ERROR_CODES)[number]

const CODES: ReadonlySet<string> = new Set(DURABLE_HARNESS_ERROR_CODES)

/** Whether a string is one of the library's error codes. */
export function isDurableHarnessErrorCode(code: unknown): code is DurableHarnessErrorCode {
  return typeof code === 'string' && CODES.has(code)
}

// Symbol.for brands: an error thrown by another copy of the package (two versions in one app, a
// harness module loaded by a global `harness` bin) is still recognised. BRAND says "ours" (its value
// stays `true`, which older copies check); CLASSES lists the names of the error's classes, its own
// first, for `instanceof` a subclass.
const BRAND = Symbol.for('durable-harness.error')
const CLASSES = Symbol.for('durable-harness.error.classes')

/**
 * Every error the library throws on purpose. Each one says what was wrong and what to do,
 * and carries a stable `code` so callers can branch without parsing messages.
 *
 * `instanceof` holds across copies of the package: `e instanceof SessionBusyError` is true for a
 * `SessionBusyError` another copy made (by its brand and its class names), and so is
 * {@link isDurableHarnessError}.
 */
export class DurableHarnessError extends Error {
  /** Stable code of the error, for branching (docs/errors.md). */
  readonly code: DurableHarnessErrorCode
  constructor(code: DurableHarnessErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
    Object.defineProperty(this, BRAND, { value: true })
    Object.defineProperty(this, CLASSES, { value: Object.freeze(classNames(new.target)) })
  }

  /**
   * `e instanceof X` for the library's error classes: the prototype chain within one copy, else the
   * brand and X's name among the error's classes (an error of another copy of the package).
   */
  static [Symbol.hasInstance](value: unknown): boolean {
    if (this === DurableHarnessError) return isDurableHarnessError(value)
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true
    return isDurableHarnessError(value) && classesOf(value).includes(this.name)
  }
}

/** The names of a class and its bases up to DurableHarnessError, own first. */
function classNames(leaf: abstract new (...args: never[]) => unknown): string[] {
  const names: string[] = []
  for (let c: unknown = leaf; typeof c === 'function' && c !== Error; c = Object.getPrototypeOf(c)) names.push(c.name)
  return names
}

// an error of a copy from before CLASSES: its own class name only
function classesOf(error: object): readonly unknown[] {
  try {
    const classes: unknown = Reflect.get(error, CLASSES)
    return Array.isArray(classes) ? classes : [Reflect.get(error, 'name')]
  } catch {
    return []
  }
}

/**
 * Whether `error` is an error the library threw on purpose (a `DurableHarnessError` of this or of any
 * other copy of the package), so its `code` is one of {@link DurableHarnessErrorCode}.
 *
 * @example
 * ```ts
 * try {
 *   await session.answer(questionId, value)
 * } catch (error) {
 *   if (!isDurableHarnessError(error)) throw error
 *   if (error.code === 'question_answered') return 'someone answered first'
 *   throw error
 * }
 * ```
 */
export function isDurableHarnessError(error: unknown): error is DurableHarnessError {
  try {
    return typeof error === 'object' && error !== null && Reflect.get(error, BRAND) === true
  } catch {
    return false // a Proxy whose get trap throws (a tool may throw anything)
  }
}

/** JSON for an error message, cut short: a caller's bad value may be huge. */
export function describeValue(value: unknown): string {
  let text: string
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value))
  } catch {
    text = `(a ${typeof value})`
  }
  return text.length > 120 ? `${text.slice(0, 120)}…` : text
}

/** The message of a cause, for an error message; never throws. */
export function causeText(cause: unknown): string {
  try {
    return cause instanceof Error ? cause.message : String(cause)
  } catch {
    return 'an error that cannot be described'
  }
}
