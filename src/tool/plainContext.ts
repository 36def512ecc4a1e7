import { DuplicateStepError, DurableSessionRequiredError } from '../errors.js'
import type { DurableContextFields, Step, StepFnOptions } from './context.js'
import { parseDuration, parseWakeTime } from './duration.js'
import { toJsonCopy } from './json.js'
import { NO_SECRETS } from './secrets.js'

/**
 * The step context outside a durable session, e.g. in plain `chat()` (R13): step.do runs fn each time
 * and returns the JSON copy, step.sleep waits its full time, step.ask and append throw.
 */
export function createPlainContext(toolCallId: string, abortSignal?: AbortSignal): DurableContextFields {
  const used = new Set<string>()
  const claim = (name: string) => {
    if (used.has(name)) throw new DuplicateStepError(toolCallId, name)
    used.add(name)
  }
  const wait = (ms: number) =>
    new Promise<void>((resolve, reject) => {
      if (abortSignal?.aborted) return reject(abortSignal.reason)
      const timer = setTimeout(resolve, ms)
      abortSignal?.addEventListener('abort', () => (clearTimeout(timer), reject(abortSignal.reason)), { once: true })
    })
  const step: Step = {
    do: (async (name: string, fn: (options: StepFnOptions) => unknown) => {
      claim(name)
      const value = await fn({ idempotencyKey: `chat:${toolCallId}:${name}` })
      return toJsonCopy(value, `Step "${name}" value`)
    }) as Step['do'],
    async sleep(name, duration) {
      claim(name)
      await wait(parseDuration(duration))
    },
    async sleepUntil(name, at) {
      claim(name)
      await wait(Math.max(0, parseWakeTime(at) - Date.now()))
    },
    async ask() {
      throw new DurableSessionRequiredError('step.ask')
    },
  }
  return {
    step,
    append() {
      throw new DurableSessionRequiredError('append')
    },
    secrets: NO_SECRETS,
  }
}
