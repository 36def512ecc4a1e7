import { DelayedError, type Job } from 'bullmq'
import type { Logger } from 'pino'
import { FencedError, StorageError, ToolTimeoutError } from '../errors.js'
import { SessionLog } from '../log/index.js'
import { questionIdOf, replayOf, SecretStore, timeoutOf, type Park } from '../tool/index.js'
import type { ToolJobData } from './names.js'
import { childSettled, isAgentTool, runAgentCall } from './agentCall.js'
import type { CallAborts } from './callAborts.js'
import { keptResult, resolveSecrets, runCall, toToolError, type CallInput, type CallOutcome } from './runCall.js'
import type { RuntimeHarness } from './runtime.js'
import type { HarnessQueues } from './workers.js'

export interface ToolJobDeps {
  harness: RuntimeHarness
  logFor(sessionId: string): SessionLog
  queuesOf(harness: RuntimeHarness): HarnessQueues
  aborts: CallAborts
  logger: Logger
}

/**
 * The processor of a tool job, a short composition: begin (load state, classify, new epoch) → run or
 * take the cut path → hooks and redaction → land the kept result in one fenced write, or park.
 */
export async function processToolJob(job: Job<ToolJobData>, token: string | undefined, deps: ToolJobDeps): Promise<void> {
  const { harness } = deps
  const call: CallInput = job.data
  const log = deps.logFor(call.sessionId)
  const tool = harness.toolsByName.get(call.name)
  const { inputId } = job.data
  const begin = await log.beginCall(call.toolCallId, call.name, tool ? replayOf(tool) : 'never', {
    harness: harness.name,
    ...(inputId ? { inputId } : {}),
  })
  const logger = deps.logger.child({ sessionId: call.sessionId, toolCallId: call.toolCallId, attempt: begin.attempt, tool: call.name })
  if (begin.kind === 'done') {
    logger.debug('call already has its kept result; not run again')
    return
  }
  logger.debug({ kind: begin.kind, epoch: begin.epoch }, 'tool call started')
  const fence = { toolCallId: call.toolCallId, epoch: begin.epoch }
  // caught, not thrown: a failing resolver must become this call's tool error, not a job failure whose retry looks like a cut
  let secrets = new SecretStore()
  let secretsFailed: unknown = null
  try {
    secrets = await resolveSecrets(harness, call.sessionId)
  } catch (error) {
    secretsFailed = error
  }
  try {
    let outcome
    const interrupted = { error: { message: harness.durability.interruptedToolResult, code: 'interrupted' } }
    if (secretsFailed) {
      // its message may hold the very secrets it failed to return: only the error's name reaches the log
      logger.error({ errName: (secretsFailed as Error)?.name }, 'the harness secrets resolver failed; the call gets a tool error')
      outcome = { error: { message: `The session secrets could not be resolved (${(secretsFailed as Error)?.name ?? 'error'}); the tool did not run.`, code: 'secrets_unavailable' } }
    } else if (isAgentTool(tool)) {
      outcome = await runAgentCall(tool, job.data, begin, deps, interrupted)
      if ('park' in outcome) return await park(job, token, log, fence, outcome.park, logger, () => childSettled(deps.logFor, job.data))
    } else if (begin.kind === 'cut') {
      // R10: nobody knows if a cut 'never' call finished; the model gets a tool error instead of a second run
      logger.warn('call was cut by a crash; replay is never: landing the interrupted tool error')
      outcome = interrupted
    } else {
      if (begin.kind === 'rerun') logger.warn('call was cut by a crash; replay is safe: running it again')
      const attempt = deps.aborts.open(inputId ? `${call.sessionId}|${inputId}` : undefined)
      const timeoutMs = timeoutOf(tool) ?? harness.durability.toolTimeoutMs
      outcome = await bounded(runCall(harness, log, call, begin, secrets, attempt.signal), attempt, () => new ToolTimeoutError(call.name, timeoutMs), timeoutMs)
      if ('error' in outcome && (outcome.error.code === 'timeout' || outcome.error.code === 'aborted')) logger.warn({ code: outcome.error.code }, 'tool call attempt ended before the tool did')
      if ('park' in outcome) {
        const p = outcome.park
        const woken = async () => p.kind === 'ask' && !!(await log.getQuestion(questionIdOf(fence.toolCallId, p.stepName)))?.answer.found
        return await park(job, token, log, fence, p, logger, woken)
      }
    }
    const kept = await keptResult(harness, call, outcome, secrets)
    await log.landResult(fence, call.name, kept)
    logger.info({ outcome: 'error' in kept ? 'error' : 'result' }, 'tool call landed')
  } catch (error) {
    if (error instanceof FencedError) {
      logger.warn({ err: error }, 'attempt was superseded by a newer one; it wrote nothing more')
      return
    }
    if (error instanceof StorageError) logger.error({ err: error }, 'a write of this call failed after its retries; the job fails and the call is picked up again as a cut')
    throw error
  }
}

/**
 * Ends an attempt at its time limit or when its turn ends (aborted, timed out, from any process),
 * whichever comes first, with a tool error the model reads. JavaScript cannot stop the tool's
 * promise: its abortSignal fires, no later step starts, and once the error has landed (the call is
 * done) every write it still tries is fenced out. Its worker slot is free at once.
 */
async function bounded(
  run: Promise<CallOutcome>,
  attempt: { signal: AbortSignal; abort(reason: Error): void; done(): void },
  timeoutError: () => Error,
  timeoutMs: number,
): Promise<CallOutcome> {
  const timer = setTimeout(() => attempt.abort(timeoutError()), timeoutMs)
  let onAbort = () => {}
  const ended = new Promise<CallOutcome>((resolve) => {
    onAbort = () => {
      const reason: unknown = attempt.signal.reason
      resolve({ error: reason instanceof ToolTimeoutError ? toToolError(reason) : { code: 'aborted', message: `The call was stopped: its turn ended (${toToolError(reason).message}).` } })
    }
    attempt.signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([run, ended])
  } finally {
    clearTimeout(timer)
    attempt.signal.removeEventListener('abort', onAbort)
    attempt.done()
  }
}

/**
 * Parks the call as a BullMQ delayed job: the slot is freed at once and the job runs again from the
 * top at `until`, or earlier when an answer (or a child agent's answer) promotes it. A wake-up that
 * landed before our moveToDelayed would have promoted nothing, so `woken` is re-checked after it
 * (R8: no answer is lost).
 */
async function park(
  job: Job<ToolJobData>,
  token: string | undefined,
  log: SessionLog,
  fence: { toolCallId: string; epoch: number },
  p: Park,
  logger: Logger,
  woken: () => Promise<boolean>,
): Promise<never> {
  await log.parkCall(fence, p.kind, p.until)
  await job.moveToDelayed(p.until, token)
  logger.info({ kind: p.kind, until: new Date(p.until).toISOString() }, 'tool call parked')
  if (await woken()) await job.promote().catch(() => {})
  throw new DelayedError()
}
