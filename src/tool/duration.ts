import { InvalidDurationError } from '../errors/index.js'

/** A wait: milliseconds, or a number with a unit (`'90s'`, `'15m'`, `'2h'`, `'3d'`), up to 365 days. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`

// by the unit the pattern below matched (one of these keys)
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
export const MAX_SLEEP_MS = 365 * UNIT_MS.d

/**
 * Parses `90s`, `15m`, `2h`, `3d` or a number of ms; refuses negative, NaN and over 365 days. Takes any
 * string: the shape of a Duration is checked here at run time (a RetryAfterError's `after` may be one).
 */
export function parseDuration(duration: Duration | string): number {
  let ms: number
  if (typeof duration === 'number') ms = duration
  else {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(String(duration).trim())
    if (!match) throw new InvalidDurationError(duration, 'not a number of ms or a string like 90s')
    ms = Number(match[1]) * UNIT_MS[match[2]]
  }
  return checkSleepMs(ms, duration)
}

export function checkSleepMs(ms: number, original: unknown): number {
  if (typeof ms !== 'number' || Number.isNaN(ms)) throw new InvalidDurationError(original, 'not a number')
  if (ms < 0) throw new InvalidDurationError(original, 'negative')
  if (ms > MAX_SLEEP_MS) throw new InvalidDurationError(original, 'over 365 days')
  return Math.round(ms)
}

/** A wake time as epoch ms, from a Date or epoch ms, at most 365 days from now. */
export function parseWakeTime(at: Date | number, now = Date.now()): number {
  const ms = at instanceof Date ? at.getTime() : at
  if (typeof ms !== 'number' || Number.isNaN(ms)) throw new InvalidDurationError(at, 'not a date')
  checkSleepMs(Math.max(0, ms - now), at)
  return ms
}
