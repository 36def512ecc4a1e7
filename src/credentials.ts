import { stdSerializers } from 'pino'

/**
 * Redis credentials never reach a log line or an error message. This module is the one place that
 * knows how they can leak: inside a URL (REDIS_URL, `redis://user:password@host`) and in the
 * arguments of the AUTH / HELLO commands that ioredis attaches to its errors (`err.command.args`).
 */

// scheme://user:password@ : the user stays (it helps to tell accounts apart), the password goes
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s:@/]*):([^\s@/]*)@/gi

/** Replaces the password of every URL in `text` with `***`. */
export function redactCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, (_match, scheme: string, user: string) => `${scheme}${user}:***@`)
}

/** The server refused the credentials (wrong password, unknown user, or none given where one is required). */
export function isAuthFailure(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error)
  return /WRONGPASS|NOAUTH|invalid username-password pair/i.test(message)
}

const AUTH_COMMANDS = new Set(['auth', 'hello'])

// Copies (never mutates: the objects belong to the caller's error) with every string redacted and the
// arguments of AUTH / HELLO replaced.
function scrub(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactCredentials(value)
  if (value === null || typeof value !== 'object' || depth > 8) return value
  if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) out[key] = scrub(v, depth + 1)
  if (typeof out.name === 'string' && AUTH_COMMANDS.has(out.name.toLowerCase()) && 'args' in out) out.args = ['***']
  return out
}

/** pino's `err` serializer (pino's standard one, then redacted). createLogger and the host install it. */
export function serializeError(err: unknown): unknown {
  return scrub(errorLike(err) ? stdSerializers.err(err) : err, 0)
}

/** pino's own test of what its serializer takes for an error (isErrorLike): it leaves anything else as it is. */
function errorLike(value: unknown): value is Error {
  return typeof value === 'object' && value !== null && 'message' in value && typeof value.message === 'string'
}
