import { DelayedError, type Job } from 'bullmq'
import type { Harness, ModelErrorDecision } from '../core/index.js'
import type { RecordOf, SessionLog } from '../log/index.js'
import type { TurnJobData } from '../queue/index.js'
import { causeText, describeValue } from '../errors/base.js'
import type { TurnFold } from './fold.js'
import { MAX_MODEL_RETRY_DELAY_MS, type ModelCallError } from './modelErrors.js'

/** A retry due sooner than this waits in the process; a later one parks the turn job (no worker slot). */
const IN_PROCESS_WAIT_MS = 2_000
/** A paused turn's job wakes this often to look again (a resume promotes it at once). */
const PAUSE_RECHECK_MS = 24 * 3600_000

type Failure = Omit<RecordOf<'harness.input.settled'>, 'type' | 'inputId'>

/**
 * Before a model call: a paused turn parks until `session.resume`; a retry waits for its logged next
 * time, in process when it is near, else as a delayed job. The time is in the log, so a crash or a
 * restart waits only what is left. Throws DelayedError when it parked the job.
 */
export async function waitForModelCall(
  job: Job<TurnJobData>,
  token: string | undefined,
  log: SessionLog,
  fold: TurnFold,
  signal: AbortSignal,
): Promise<void> {
  if (fold.paused) {
    await job.moveToDelayed(Date.now() + PAUSE_RECHECK_MS, token)
    // a resume that came before our moveToDelayed promoted nothing: look again
    if (!(await log.inputs.getInput(job.data.inputId))?.paused) await job.promote().catch(() => {})
    throw new DelayedError()
  }
  const nextAt = fold.retry?.nextAt ?? 0
  const wait = nextAt - Date.now()
  if (wait <= 0) return
  if (wait > IN_PROCESS_WAIT_MS) {
    await job.moveToDelayed(nextAt, token)
    throw new DelayedError()
  }
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, wait)
    signal.addEventListener('abort', done, { once: true })
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
  })
}

/** The policy's decision, checked: a retry's delay (a negative one is now, none is 0), or why the decision is no decision. */
function checkDecision(decided: ModelErrorDecision | undefined): ModelErrorDecision | { refused: string } {
  if (decided === undefined) return { action: 'fail' }
  // the policy is user code: its decision is checked as if it were unknown
  const action: unknown = typeof decided === 'object' && decided !== null ? decided.action : undefined
  if (action === 'pause' || action === 'fail') return { action }
  if (action !== 'retry')
    return { refused: `turn.onModelError returned ${describeValue(decided)}: return { action: 'retry' | 'pause' | 'fail' } or undefined.` }
  const delayMs: unknown = Reflect.get(decided, 'delayMs') ?? 0
  if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs > MAX_MODEL_RETRY_DELAY_MS)
    return {
      refused:
        `turn.onModelError returned delayMs ${describeValue(delayMs)}: a retry waits at most 365 days ` +
        `(${MAX_MODEL_RETRY_DELAY_MS} ms). Return a delay in ms, not a time.`,
    }
  return { action: 'retry', delayMs: Math.max(0, Math.round(delayMs)) }
}

/** What `decideModelError` decided: the action, the failure to settle with, and a policy's own error (to log). */
export interface ModelErrorOutcome {
  decision: ModelErrorDecision['action']
  failure?: Failure
  policyError?: unknown
}

/**
 * A failed model call goes to `turn.onModelError`: a retry is logged with its try count and next
 * time, a pause is logged and leaves the turn open, a failure is returned for the caller to settle
 * (with the provider's message). A policy that throws, or returns no decision it could mean (a delay
 * that is no number or over MAX_MODEL_RETRY_DELAY_MS), fails the turn with `model_policy_error`: the
 * policy is the bug, and running the turn again would only meet it again. The records are written for
 * the fold's response count only, so a stale run of the turn writes nothing.
 */
export async function decideModelError(
  harness: Harness,
  log: SessionLog,
  fold: TurnFold,
  inputId: string,
  error: ModelCallError,
  call: { compaction?: boolean } = {},
): Promise<ModelErrorOutcome> {
  const { info } = error
  let decision: ReturnType<typeof checkDecision>
  try {
    const context = {
      sessionId: log.sessionId,
      inputId,
      error: info,
      retries: fold.retries,
      ...(call.compaction ? { compaction: true } : {}),
    }
    decision = checkDecision(await harness.turn.onModelError(context))
  } catch (policyError) {
    const message = `turn.onModelError threw: ${causeText(policyError)} (the model error: ${info.message})`
    return { decision: 'fail', policyError, failure: { outcome: 'failed', error: { code: 'model_policy_error', message } } }
  }
  if ('refused' in decision) {
    const message = `${decision.refused} (the model error: ${info.message})`
    return { decision: 'fail', failure: { outcome: 'failed', error: { code: 'model_policy_error', message } } }
  }
  const logged = { message: info.message, ...(info.code !== undefined ? { code: info.code } : {}) }
  if (decision.action === 'retry') {
    const record = {
      type: 'harness.turn.retry',
      inputId,
      attempt: fold.retries + 1,
      error: logged,
      nextAt: Date.now() + decision.delayMs,
    } as const
    await log.inputs.logTurnRecord(record, fold.responses.length)
    return { decision: 'retry' }
  }
  if (decision.action === 'pause') {
    await log.inputs.logTurnRecord({ type: 'harness.turn.paused', inputId, error: logged, at: Date.now() }, fold.responses.length)
    return { decision: 'pause' }
  }
  const after = fold.retries > 0 ? ` (after ${fold.retries} ${fold.retries === 1 ? 'retry' : 'retries'})` : ''
  return { decision: 'fail', failure: { outcome: 'failed', error: { code: 'model_error', message: `${info.message}${after}` } } }
}
