import type { Logger } from 'pino'

/** Runs `pass` every `everyMs` (with jitter, so many workers don't sweep in lockstep), never overlapping. */
export function startSweepTimer(pass: () => Promise<unknown>, everyMs: number, logger: Logger): { stop(): void } {
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  const next = () => {
    if (stopped) return
    timer = setTimeout(
      () => {
        // a timer callback cannot be awaited: a failed pass is logged here, and the next one is planned either way
        void pass()
          .catch((err: unknown) => logger.warn({ err }, 'sweep failed; next pass retries'))
          .then(next)
      },
      everyMs * (0.75 + Math.random() / 2),
    )
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
