import { DelayedError, type Job } from 'bullmq'
import type { Logger } from 'pino'
import { FencedError } from '../errors.js'
import { SessionLog } from '../log/index.js'
import { questionIdOf, replayOf, SecretStore, type Park } from '../tool/index.js'
import type { ToolJobData } from './names.js'
import { childSettled, isAgentTool, runAgentCall } from './agentCall.js'
import type { CallAborts } from './callAborts.js'
import { keptResult, resolveSecrets, runCall, type CallInput } from './runCall.js'
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
      const abort = deps.aborts.open(inputId ? `${call.sessionId}|${inputId}` : undefined)
      try {
        outcome = await runCall(harness, log, call, begin, secrets, abort.signal)
      } finally {
        abort.done()
      }
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
    throw error
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
