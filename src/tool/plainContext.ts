import { DuplicateStepError, DurableSessionRequiredError } from '../errors/index.js'
import type { DurableContextFields, Step, StepFnOptions, StepOptions } from './context.js'
import { parseDuration, parseWakeTime } from './duration.js'
import { toJsonCopy } from './json.js'
import { waitFor, type RetryPolicy } from './retry.js'
import { NO_SECRETS } from './secrets.js'
import { NO_CHILD_AGENTS, NO_CHILD_TOOLS } from './children.js'
import { policyOf, tryInProcess } from './stepRetry.js'

/**
 * The step context outside a durable session, e.g. in plain `chat()` (R13): step.do runs fn each time
 * and returns the JSON copy (with a retry policy, its tries run in process), step.sleep waits its
 * full time, step.ask and append throw.
 */
export function createPlainContext(toolCallId: string, abortSignal?: AbortSignal, toolRetry?: RetryPolicy): DurableContextFields {
  const used = new Set<string>()
  const claim = (name: string) => {
    if (used.has(name)) throw new DuplicateStepError(toolCallId, name)
    used.add(name)
  }
  const wait = (ms: number) => waitFor(ms, abortSignal)
  const step: Step = {
    do: (async (name: string, fn: (options: StepFnOptions) => unknown, stepOptions?: StepOptions) => {
      claim(name)
      const policy = policyOf(stepOptions?.retry, toolRetry, name)
      const run = async () => fn({ idempotencyKey: `chat:${toolCallId}:${name}` })
      const value = policy ? await tryInProcess(policy, name, run, abortSignal) : await run()
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
    async waitForEvent() {
      throw new DurableSessionRequiredError('step.waitForEvent')
    },
  }
  return {
    step,
    append() {
      throw new DurableSessionRequiredError('append')
    },
    secrets: NO_SECRETS,
    tools: NO_CHILD_TOOLS,
    agents: NO_CHILD_AGENTS,
    budget: async () => [],
  }
}
