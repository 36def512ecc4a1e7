// Errors of step retries (step.do's `retry`): thrown by a tool's step fn to steer the tries, or by
// step.do when they are used up.
import { DurableHarnessError, causeText } from './base.js'

/** Thrown by a step fn: no further try of the step; step.do throws this error at once (R16). */
export class NonRetryableError extends DurableHarnessError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('non_retryable', message, options)
  }
}

/**
 * Thrown by a step fn: the next try not before `after` (ms or a string like '2s' from now, or a
 * Date), e.g. a provider's `retry-after`. It counts as a failed try like any other error.
 */
export class RetryAfterError extends DurableHarnessError {
  /** When it was thrown (ms): a Duration counts from here. */
  readonly thrownAt = Date.now()
  constructor(
    message: string,
    readonly after: number | string | Date,
    options?: { cause?: unknown },
  ) {
    super('retry_after', message, options)
  }
}

/** step.do's error when every try of a step failed; `cause` is the last try's error. */
export class StepRetriesExhaustedError extends DurableHarnessError {
  constructor(
    readonly stepName: string,
    readonly attempts: number,
    cause: unknown,
  ) {
    super(
      'step_retries_exhausted',
      `Step "${stepName}" failed ${attempts} time(s), its retry policy's attempts; the last error: ${causeText(cause)}`,
      { cause },
    )
  }
}
