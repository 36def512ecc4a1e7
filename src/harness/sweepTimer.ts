import type { Logger } from 'pino'

/**
 * Runs `pass` again `delayMs()` after each one ends (never overlapping) until stopped; a failed pass
 * goes to `onFailure` and the next one is planned either way. The timers do not keep the process alive.
 */
export function repeatPasses(pass: () => Promise<unknown>, delayMs: () => number, onFailure: (err: unknown) => void): { stop(): void } {
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  const next = () => {
    if (stopped) return
    // a timer callback cannot be awaited: a failed pass is reported here
    timer = setTimeout(() => void pass().catch(onFailure).then(next), delayMs())
    timer.unref()
  }
  next()
  return {
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}

/** Runs `pass` every `everyMs` (with jitter, so many workers don't sweep in lockstep), never overlapping. */
export function startSweepTimer(pass: () => Promise<unknown>, everyMs: number, logger: Logger): { stop(): void } {
  return repeatPasses(
    pass,
    () => everyMs * (0.75 + Math.random() / 2),
    (err) => logger.warn({ err }, 'sweep failed; next pass retries'),
  )
}
