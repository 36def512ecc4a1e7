import { ConfigError, FencedError, LockLostError, NonRetryableError, StorageError } from '../errors/index.js'
import { parseDuration, type Duration } from './duration.js'
import { Park } from './park.js'
import { RetryAfterError } from './retryAfter.js'

/** How a step is tried again when its fn throws (step.do's `retry`, or durableTool's default for every step). */
export interface RetryPolicy {
  /** Tries in all, the first one included (1: no retry). */
  attempts: number
  /** Wait before the second try; default 1s. */
  delay?: Duration
  /** How the wait grows from try to try: delay × 2^(n-1) (default), delay × n, or delay. */
  backoff?: 'exponential' | 'linear' | 'constant'
  /** The longest wait between two tries. */
  maxDelay?: Duration
  /** True: each wait is drawn at random between half of it and all of it (chosen once, then stored). */
  jitter?: boolean
  /** False: the error is not retried; step.do throws it at once. */
  retryIf?: (error: unknown) => boolean
}

interface CheckedPolicy {
  attempts: number
  delayMs: number
  backoff: 'exponential' | 'linear' | 'constant'
  maxDelayMs: number
  jitter: boolean
  retryIf?: (error: unknown) => boolean
}

/**
 * A wait longer than this parks the call (a delayed job, no worker slot) instead of waiting in the
 * worker; a shorter one costs less in process than a park and a wake-up (docs/decisions/step-retries.md).
 */
export const PARK_RETRY_AFTER_MS = 2_000

const BACKOFFS = ['exponential', 'linear', 'constant'] as const

/** Checks a policy once (the step's, else the tool's default); a bad one is a ConfigError naming the field. */
export function checkRetryPolicy(policy: RetryPolicy | undefined, where: string): CheckedPolicy | undefined {
  if (policy === undefined) return undefined
  const bad = (field: string, why: string, value: unknown): never => {
    throw new ConfigError(`${where}: retry.${field} ${why}, got ${JSON.stringify(value) ?? String(value)}.`)
  }
  if (typeof policy !== 'object' || policy === null) bad('', 'must be an object { attempts, delay?, backoff?, ... }', policy)
  const { attempts, delay = '1s', backoff = 'exponential', maxDelay, jitter = false, retryIf } = policy
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > 1000) bad('attempts', 'must be a whole number from 1 to 1000', attempts)
  if (!BACKOFFS.includes(backoff)) bad('backoff', "must be 'exponential', 'linear' or 'constant'", backoff)
  if (typeof jitter !== 'boolean') bad('jitter', 'must be true or false', jitter)
  if (retryIf !== undefined && typeof retryIf !== 'function') bad('retryIf', 'must be a function (error) => boolean', retryIf)
  const ms = (field: string, value: Duration) => {
    try {
      return parseDuration(value)
    } catch (error) {
      return bad(field, `must be ms or a string like '90s' (${error instanceof Error ? error.message : String(error)})`, value)
    }
  }
  return {
    attempts,
    delayMs: ms('delay', delay),
    backoff,
    maxDelayMs: maxDelay === undefined ? Infinity : ms('maxDelay', maxDelay),
    jitter,
    ...(retryIf ? { retryIf } : {}),
  }
}

/** What follows a failed try: another one at `nextAt`, or none (the step throws `error`). */
export type TryVerdict = { retry: true; nextAt: number } | { retry: false; exhausted: boolean }

/** Errors of ours that are never a step's failure: a park, a superseded attempt (or one that lost its lock), a failed write of ours. */
export function isHarnessFlow(error: unknown): boolean {
  try {
    return error instanceof Park || error instanceof FencedError || error instanceof LockLostError || error instanceof StorageError
  } catch {
    return false
  }
}

/** The verdict after failed try number `tries` (1-based). */
export function afterFailedTry(policy: CheckedPolicy, tries: number, error: unknown, now = Date.now()): TryVerdict {
  if (isNonRetryable(error) || (policy.retryIf && !policy.retryIf(error))) return { retry: false, exhausted: false }
  if (tries >= policy.attempts) return { retry: false, exhausted: true }
  const after = retryAfterOf(error)
  if (after !== undefined) return { retry: true, nextAt: after }
  const base =
    policy.backoff === 'constant'
      ? policy.delayMs
      : policy.backoff === 'linear'
        ? policy.delayMs * tries
        : policy.delayMs * 2 ** (tries - 1)
  const wait = Math.min(base, policy.maxDelayMs, 365 * 86_400_000)
  return { retry: true, nextAt: now + Math.round(policy.jitter ? wait / 2 + (Math.random() * wait) / 2 : wait) }
}

function isNonRetryable(error: unknown): boolean {
  try {
    return error instanceof NonRetryableError
  } catch {
    return false
  }
}

/** The time a RetryAfterError names (checked when it was made: never before its throw, at most 365 days on). */
function retryAfterOf(error: unknown): number | undefined {
  try {
    return error instanceof RetryAfterError ? error.retryAt : undefined
  } catch {
    return undefined
  }
}

/** An error as the failed try's record stores it: its message (cut) and its name. */
export function describeFailure(error: unknown): { message: string; name?: string } {
  try {
    if (error instanceof Error) return { message: error.message.slice(0, 2_000), name: error.name }
    return { message: String(error).slice(0, 2_000) }
  } catch {
    return { message: 'an error that cannot be described' }
  }
}

/** Waits `ms` in process, or rejects with the signal's reason. */
export function waitFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => (clearTimeout(timer), reject(signal!.reason))
    // the listener goes with the wait: a call's many waits must not pile up on its signal
    const timer = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
