import { ConfigError, DurableHarnessError } from '../errors/index.js'
import { MAX_SLEEP_MS, parseDuration } from './duration.js'

/**
 * Thrown by a step fn: the next try not before `after` (a Duration from the throw, or a Date), e.g. a
 * provider's `retry-after`. It counts as a failed try like any other error.
 *
 * A negative delay (`-3000`, `'-3s'`) or a past Date is taken as now: the provider's clock runs ahead
 * of ours. NaN, an infinite delay, one over 365 days, an invalid Date or a string that is no Duration
 * is refused here, where it is thrown: the constructor throws a ConfigError saying why (in a step fn,
 * that error is the failed try, tried again by the step's policy).
 */
export class RetryAfterError extends DurableHarnessError {
  /** When it was thrown (epoch ms): a Duration counts from here. */
  readonly thrownAt: number
  /** The earliest time of the next try (epoch ms): never before `thrownAt`. */
  readonly retryAt: number
  constructor(
    message: string,
    readonly after: number | string | Date,
    options?: { cause?: unknown },
  ) {
    super('retry_after', message, options)
    this.thrownAt = Date.now()
    this.retryAt = retryAtOf(message, after, this.thrownAt)
  }
}

function retryAtOf(message: string, after: unknown, now: number): number {
  const refuse = (why: string, got: string): never => {
    throw new ConfigError(
      `RetryAfterError ${JSON.stringify(message.slice(0, 200))}: \`after\` must be ${why}, got ${got}. ` +
        'A negative delay or a past Date is taken as now.',
    )
  }
  const delay = 'a finite delay of at most 365 days (ms, or a string like 90s) or a Date at most 365 days ahead'
  if (after instanceof Date) {
    const at = after.getTime()
    if (Number.isNaN(at)) return refuse(delay, 'an invalid Date')
    if (at - now > MAX_SLEEP_MS) return refuse(delay, after.toISOString())
    return Math.max(at, now)
  }
  if (typeof after === 'number') {
    if (!Number.isFinite(after) || after > MAX_SLEEP_MS) return refuse(delay, String(after))
    return now + Math.max(0, Math.round(after))
  }
  if (typeof after !== 'string') return refuse(delay, `a ${typeof after}`)
  // '-3s': a Duration with a minus, now
  const negative = after.trim().startsWith('-')
  let ms: number
  try {
    ms = parseDuration(negative ? after.trim().slice(1) : after)
  } catch {
    return refuse(delay, JSON.stringify(after.slice(0, 50)))
  }
  return negative ? now : now + ms
}
