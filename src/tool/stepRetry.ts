import { NonRetryableError, StepRetriesExhaustedError } from '../errors/index.js'
import type { StepRetryState } from '../log/index.js'
import { Park } from './park.js'
import type { RecordedSteps } from './recordedSteps.js'
import {
  afterFailedTry,
  checkRetryPolicy,
  describeFailure,
  isHarnessFlow,
  PARK_RETRY_AFTER_MS,
  waitFor,
  type RetryPolicy,
} from './retry.js'
import type { SecretStore } from './secrets.js'

type CheckedPolicy = NonNullable<ReturnType<typeof checkRetryPolicy>>

const checked = new WeakMap<RetryPolicy, CheckedPolicy>()

/** The policy a step runs under (its own, else the tool's default), checked once per policy object. */
export function policyOf(own: RetryPolicy | undefined, toolDefault: RetryPolicy | undefined, name: string): CheckedPolicy | undefined {
  const policy = own ?? toolDefault
  if (policy === undefined) return undefined
  let found = typeof policy === 'object' && policy !== null ? checked.get(policy) : undefined
  if (!found) {
    found = checkRetryPolicy(policy, `step.do("${name}")`)!
    checked.set(policy, found)
  }
  return found
}

export interface DurableTries {
  /** Where the tries are recorded (the session log's call ledger). */
  steps: RecordedSteps
  name: string
  policy: CheckedPolicy
  secrets: SecretStore
  signal: AbortSignal | undefined
  /** The step's stored retry state: where a run again (crash, wake-up) goes on from (R16). */
  state: StepRetryState | undefined
  /** Parks the call until the next try (the context remembers the park). */
  park(p: Park): never
  /** Wraps a write of ours (a failure must not become the tool's own). */
  ours<T>(write: Promise<T>): Promise<T>
}

/**
 * Tries a step's fn under its retry policy in a durable session (R16): every failed try is stored
 * (its count and the next time, fenced) before the wait, so a crash, a worker restart or a Redis
 * restart never resets them. A wait over PARK_RETRY_AFTER_MS parks the call like a sleep (R14); a
 * shorter one waits in process. The idempotency key is the caller's: the same on every try (R5).
 */
export async function tryDurably(t: DurableTries, run: () => Promise<unknown>): Promise<unknown> {
  const { steps, name } = t
  let tries = t.state?.a ?? 0
  // the stored end of the tries (exhausted, not retryable): thrown again, fn is not called again
  if (t.state?.x) throw storedEnd(name, t.state)
  if (t.state?.n !== undefined) await waitUntil(t, t.state.n)
  for (;;) {
    try {
      return await run()
    } catch (error) {
      if (isHarnessFlow(error) || t.signal?.aborted) throw error
      tries += 1
      const verdict = afterFailedTry(t.policy, tries, error)
      const failure = t.secrets.redact(describeFailure(error))
      const end = verdict.retry ? undefined : verdict.exhausted ? 'exhausted' : 'stopped'
      const state: StepRetryState = { a: tries, m: failure.message, ...(failure.name ? { c: failure.name } : {}) }
      await t.ours(
        steps.recordRetry(name, verdict.retry ? { ...state, n: verdict.nextAt } : { ...state, x: end! }, {
          type: 'harness.tool.step.retry',
          toolCallId: steps.toolCallId,
          name,
          attempt: tries,
          error: failure,
          ...(verdict.retry ? { nextAt: verdict.nextAt } : { final: end! }),
        }),
      )
      if (!verdict.retry) throw verdict.exhausted ? new StepRetriesExhaustedError(name, tries, error) : error
      await waitUntil(t, verdict.nextAt)
    }
  }
}

/** Waits for the next try: parks the call when the wait is long, else waits in process. */
async function waitUntil(t: DurableTries, at: number): Promise<void> {
  const ms = at - Date.now()
  if (ms > PARK_RETRY_AFTER_MS) t.park(new Park('retry', at, t.name))
  if (ms > 0) await waitFor(ms, t.signal)
}

/** The error a stored end of the tries stands for, after a run again. */
function storedEnd(name: string, state: StepRetryState): Error {
  const last =
    state.c === 'NonRetryableError' ? new NonRetryableError(state.m) : Object.assign(new Error(state.m), { name: state.c ?? 'Error' })
  return state.x === 'exhausted' ? new StepRetriesExhaustedError(name, state.a, last) : last
}

/** The same tries in process, nothing stored (plain `chat()`, R13): the waits are awaited, however long. */
export async function tryInProcess(
  policy: CheckedPolicy,
  name: string,
  run: () => Promise<unknown>,
  signal?: AbortSignal,
): Promise<unknown> {
  for (let tries = 1; ; tries++) {
    try {
      return await run()
    } catch (error) {
      if (signal?.aborted) throw error
      const verdict = afterFailedTry(policy, tries, error)
      if (!verdict.retry) throw verdict.exhausted ? new StepRetriesExhaustedError(name, tries, error) : error
      await waitFor(Math.max(0, verdict.nextAt - Date.now()), signal)
    }
  }
}
