import type { ModelError, ModelErrorPolicy } from '../core/index.js'
import type { ModelUsage } from '../log/index.js'
import { MAX_SLEEP_MS } from '../tool/index.js'

/** The longest wait a `turn.onModelError` policy may ask for: the bound of every durable wait (sleeps, step backoffs). */
export const MAX_MODEL_RETRY_DELAY_MS = MAX_SLEEP_MS

/**
 * A model call that failed at the provider: a RUN_ERROR chunk, or an error the adapter threw. The
 * turn hands it to `turn.onModelError`; every other error of a turn is an attempt of its job.
 */
export class ModelCallError extends Error {
  /** What the call got before it failed: its text so far, and the usage the provider reported, if any (docs/spend.md). */
  sofar: { text: string; usage?: ModelUsage | undefined } = { text: '' }
  constructor(readonly info: ModelError) {
    super(`Model error: ${info.message}`)
  }
}

/**
 * True for a try the provider refused before any output: its error carries an HTTP error status (the
 * code, or the status an SDK puts first in its message: "503 The service is overloaded") and the try
 * got no text and no usage. Providers bill no such request (docs/spend.md, "Honest counting").
 */
export function refusedBeforeOutput(error: ModelCallError): boolean {
  if (error.sofar.text !== '' || error.sofar.usage) return false
  const { code, message } = error.info
  return (code !== undefined && /^[45]\d\d$/.test(code)) || /^[45]\d\d\s/.test(message)
}

// The status codes need word boundaries, or the 500 in "250000 tokens" would match. A context
// overflow, a refused key or a bad request is none of these: it fails at once.
const TRANSIENT =
  /overloaded|rate.?limit|too many requests|\b(?:408|409|425|429|500|502|503|504|529)\b|service.?unavailable|server.?error|internal.?error|bad gateway|gateway|network.?error|connection.?(?:reset|refused|lost|error|closed)|socket hang up|fetch failed|econnreset|econnrefused|etimedout|epipe|timed? out|timeout|terminated|provider finish_reason:\s*error(?![-\w])/i

/**
 * True for a model error that can pass when tried again: overloaded, rate limits, 408/429 and 5xx,
 * network and connection errors, timeouts. False for 400, 401, 403, 404, a context overflow.
 */
export function isTransientModelError(error: { message: string; code?: string }): boolean {
  return TRANSIENT.test(error.message) || (error.code !== undefined && TRANSIENT.test(error.code))
}

/** Options of `retryTransientErrors()`: how often and how long a transient model error is retried, and what happens after. */
export interface RetryTransientErrorsOptions {
  /** Retries of one model call (the count restarts after each response and each resume). Default 8. */
  maxRetries?: number
  /** The first delay; each retry doubles it, times a jitter from 0.75 to 1. Default 1000 ms. */
  baseDelayMs?: number
  /** No delay is longer. Default 60 000 ms. */
  maxDelayMs?: number
  /** A provider's retry-after up to this is waited for; a longer one ends the retries (onExhausted). Default 300 000 ms. */
  maxRetryAfterMs?: number
  /** Which errors to retry. Default isTransientModelError. */
  isTransient?: (error: ModelError) => boolean
  /** When the retries run out: fail the turn (default), or pause it until `session.resume(inputId)`. */
  onExhausted?: 'fail' | 'pause'
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`retryTransientErrors: ${name} must be a finite number ≥ 0, got ${String(value)}.`)
  return v
}

/** A delay option: no policy may ask for a wait over MAX_MODEL_RETRY_DELAY_MS (the turn would refuse it). */
function delayOption(name: string, value: number | undefined, fallback: number): number {
  const v = nonNegative(name, value, fallback)
  if (v > MAX_MODEL_RETRY_DELAY_MS)
    throw new RangeError(`retryTransientErrors: ${name} must be at most 365 days (${MAX_MODEL_RETRY_DELAY_MS} ms), got ${String(value)}.`)
  return v
}

/**
 * A `turn.onModelError` policy: a transient error retries after `baseDelayMs * 2^retries` (jittered,
 * at most `maxDelayMs`), or after the provider's `retryAfterMs` when it is longer; a permanent one
 * fails the turn at once with the provider's message.
 */
export function retryTransientErrors(options: RetryTransientErrorsOptions = {}): ModelErrorPolicy {
  const maxRetries = nonNegative('maxRetries', options.maxRetries, 8)
  const baseDelayMs = delayOption('baseDelayMs', options.baseDelayMs, 1_000)
  const maxDelayMs = delayOption('maxDelayMs', options.maxDelayMs, 60_000)
  const maxRetryAfterMs = delayOption('maxRetryAfterMs', options.maxRetryAfterMs, 300_000)
  const isTransient = options.isTransient ?? isTransientModelError
  const exhausted = options.onExhausted ?? 'fail'
  if (exhausted !== 'fail' && exhausted !== 'pause')
    throw new RangeError(`retryTransientErrors: onExhausted must be 'fail' or 'pause', got ${JSON.stringify(exhausted)}.`)
  return ({ error, retries }) => {
    if (!isTransient(error)) return { action: 'fail' }
    const after = error.retryAfterMs
    if (retries >= maxRetries || (after !== undefined && after > maxRetryAfterMs)) return { action: exhausted }
    const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** retries) * (0.75 + Math.random() * 0.25)
    return { action: 'retry', delayMs: Math.round(Math.max(backoff, after ?? 0)) }
  }
}

/** A property of a value of unknown shape: undefined on a primitive (none has the fields read here). */
function fieldOf(value: unknown, key: string): unknown {
  return (typeof value === 'object' && value !== null) || typeof value === 'function' ? Reflect.get(value, key) : undefined
}

/** The delay a `retry-after-ms` or `retry-after` header asks for (seconds or an HTTP date), if any. */
export function retryAfterOf(headers: unknown, now = Date.now()): number | undefined {
  const get = (name: string): string | undefined => {
    if (!headers || typeof headers !== 'object') return undefined
    // a fetch Headers (get) or a plain object of header fields
    const v: unknown = 'get' in headers && typeof headers.get === 'function' ? headers.get(name) : fieldOf(headers, name)
    return typeof v === 'string' ? v.trim() : undefined
  }
  const ms = Number(get('retry-after-ms'))
  if (get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms
  const after = get('retry-after')
  if (!after) return undefined
  if (/^\d+(\.\d+)?$/.test(after)) return Number(after) * 1_000
  const at = Date.parse(after)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** The model error of a RUN_ERROR chunk or of what an adapter threw: the provider's message, code and retry-after. */
export function modelErrorOf(source: unknown): ModelError {
  const error = fieldOf(source, 'error')
  const nested = error && typeof error === 'object' ? error : undefined
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined)
  const message =
    text(fieldOf(nested, 'message')) ??
    text(fieldOf(source, 'message')) ??
    (source instanceof Error ? source.message : undefined) ??
    'unknown model error'
  const code = text(fieldOf(nested, 'code')) ?? text(fieldOf(source, 'code')) ?? text(fieldOf(source, 'status'))
  const given = [fieldOf(nested, 'retryAfterMs'), fieldOf(source, 'retryAfterMs')].find(
    (v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0,
  )
  const retryAfterMs = given ?? retryAfterOf(fieldOf(source, 'headers'))
  return { message, ...(code !== undefined ? { code } : {}), ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }
}
