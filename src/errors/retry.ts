// Errors of step retries (step.do's `retry`): thrown by a tool's step fn to steer the tries, or by
// step.do when they are used up. RetryAfterError, whose `after` is a Duration, is in tool/retryAfter.ts.
import { DurableHarnessError, causeText } from './base.js'

/** Thrown by a step fn: no further try of the step; step.do throws this error at once (R16). */
export class NonRetryableError extends DurableHarnessError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('non_retryable', message, options)
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
