import { DelayedError, type Job } from 'bullmq'
import { FencedError, LockLostError, StorageError } from '../errors/index.js'
import { lazyChild, type LineLogger, type Logger } from '../logger.js'
import { isAgentTool, toolOfCall, type Harness } from '../core/index.js'
import { contextOf, type BeginResult, type CallMarks, type Fence, type RedisClient, type SessionLog, type ToolEnd } from '../log/index.js'
import type { HarnessQueues, ToolJobData } from '../queue/index.js'
import {
  NO_SECRETS,
  questionIdOf,
  resolverErrorName,
  resolveSecrets,
  SecretStore,
  timeoutOf,
  type AttemptHold,
  type Park,
} from '../tool/index.js'
import { agentToolOf, childSettled, runAgentCall } from './agentCall.js'
import type { AgentHost } from '../fanout/index.js'
import { approvalDecided, decideApproval, needsApproval } from './approval.js'
import { bounded } from './bounded.js'
import { abortedTurn, cancelledByAbort, cancelledError, type AttemptAbort, type CallAborts } from './callAborts.js'
import { keptResult } from './keptResult.js'
import { beginLoggedCall, type ToolCall } from './loggedCall.js'
import { runWithMiddleware } from './middleware.js'
import { runCall, type CallInput, type CallOutcome } from './runCall.js'
import { releaseCallSlot } from './limitedCall.js'
import { slotsOf, wakeParent } from './childCall.js'
import { holdingSlot, type HeldSlot } from '../limits/slot.js'
import { callBegan, callLanded, callLanding, countFenced, countLockLost } from '../telemetry/index.js'
import type { AttemptLock } from './attemptLock.js'
import { park, parksWithoutJob, parkWithoutJob } from './parking.js'

export interface ToolJobDeps {
  harness: Harness
  logFor(sessionId: string): SessionLog
  queuesOf(harness: Harness): HarnessQueues
  aborts: CallAborts
  logger: Logger
  /**
   * The worker's own connection, when BullMQ sends the job's completion on it (one Redis, not a
   * Cluster): the landing is sent there right before, so the two travel in one round trip, in order.
   */
  completesOn?: RedisClient
  /** The deployment's call marks: a marked runTool job's first delivery skips its begin (loggedCall.ts). */
  marks?: CallMarks | undefined
  /** The job was started by its request's write in this process: its first attempt skips its begin unchecked (loggedCall.ts). */
  startedHere?: boolean | undefined
  /** The job lock of this attempt: user code starts only while it is held (attemptLock.ts). */
  lock?: AttemptLock | undefined
  /** The host's harnesses, for child agents (ctx.agents, docs/fan-out.md). */
  agents?: AgentHost | undefined
}

/**
 * The processor of a tool job, top-down: begin (load state, classify, new epoch) → the attempt's
 * outcome (run, or the cut path) → park, or keep (hooks, redaction) and land in one fenced write.
 */
export async function processToolJob(job: Job<ToolJobData>, token: string | undefined, deps: ToolJobDeps): Promise<void> {
  // the call as the log holds it, whatever the job's data says (the job's name is the tool's name)
  const { call, begin, attempt, log } = await beginLoggedCall(job, deps)
  const logger = lazyChild(deps.logger, { sessionId: call.sessionId, toolCallId: call.toolCallId, attempt: begin.attempt, tool: call.name })
  if (begin.kind === 'done') {
    attempt.done()
    return logger.debug('call already has its kept result; not run again')
  }
  logger.debug({ kind: begin.kind, epoch: begin.epoch }, 'tool call started')
  callBegan(deps.harness.name, call, begin)
  const fence = { toolCallId: call.toolCallId, epoch: begin.epoch }
  let held: HeldSlot | undefined
  try {
    const input = begin.input ?? null
    const aborted = input?.status === 'settled' ? await abortedTurn(log, call.inputId!) : undefined
    if (aborted !== undefined) {
      // woken (or picked up again) after its turn was aborted: it ends as cancelled, the tool does not
      // run; a cut attempt before may have run it, a resumed call's park says whether it began (R19)
      await log.calls.landResult(fence, call.name, { error: cancelledError(aborted) }, begin.kind === 'cut' ? 'unknown' : 'asBefore')
      return logger.info('turn was aborted before this attempt: landed the cancelled tool error')
    }
    // its tree's width (R24) and its tool's limit (R17): a call that must wait parks without a worker slot until handed one
    const taking = slotsOf(deps, log, call, input, fence, logger, contextOf(input))
    const slot = taking && (await taking)
    if (slot === 'landed') return
    if (slot && 'error' in slot) return void (await log.calls.landResult(fence, call.name, { error: slot.error }))
    if (slot && 'park' in slot) return await park(job, token, call, log, fence, slot.park, logger, slot.handed)
    held = slot?.held
    // user code starts only while the attempt holds its job lock and its limit slot's lease
    const hold = held ? holdingSlot(deps.lock, held) : deps.lock
    // ctx.context: the context the turn's input was given with
    const withContext = { ...call, context: contextOf(input) }
    const { outcome, secrets, duration, toolEnd } = await attemptOutcome(withContext, begin, log, deps, logger, attempt, hold)
    if ('park' in outcome) {
      const isWoken = async () =>
        (await woken(outcome.park, call, fence, deps)) || (await cancelledByAbort(log, call, fence, outcome.park, logger))
      if (parksWithoutJob(job, outcome.park)) return await parkWithoutJob(job, token, log, fence, outcome.park, logger, isWoken, deps)
      return await park(job, token, call, log, fence, outcome.park, logger, isWoken)
    }
    // the hooks (user code) run only while the attempt holds its call
    const locked = hold?.confirm()
    if (locked) await locked
    const kept = await keptResult(deps.harness, call, outcome, secrets, duration)
    const landing = callLanding(kept)
    const landed = () => {
      wakeParent(log, deps.queuesOf(deps.harness), call.toolCallId, 'error' in kept, logger)
      callLanded(deps.harness.name, call, landing, job.timestamp)
      logger.debug({ outcome: landing }, 'tool call landed')
    }
    const on = deps.completesOn
    // written at once, the completion right behind it on the same connection: one round trip, in
    // order (not corked into one socket write: that waited for the tick's end, -22% calls/s draining)
    if (on) return landBehindCompletion(log.via(on).calls.landResult(fence, call.name, kept, toolEnd), landed, logger)
    await log.calls.landResult(fence, call.name, kept, toolEnd)
    landed()
  } catch (error) {
    if (error instanceof FencedError) countFenced()
    if (error instanceof FencedError) return logger.warn({ err: error }, 'attempt was superseded by a newer one; it wrote nothing more')
    if (error instanceof LockLostError) {
      countLockLost()
      logger.warn(
        { err: error },
        'attempt lost its job lock to another worker; it stopped before its next side effect and wrote nothing more',
      )
      // the job is another worker's now (or the stalled check's): BullMQ leaves it alone
      throw new DelayedError()
    }
    if (error instanceof StorageError)
      logger.error({ err: error }, 'a write of this call failed after its retries; the job fails and the call is picked up again as a cut')
    throw error
  } finally {
    attempt.done()
    // once the tool's code has ended (R17: a tool that ignores its abort signal still talks to its provider)
    if (held) releaseCallSlot(held, attempt.running, logger)
  }
}

/**
 * The landing was sent on the worker's connection and the processor returns at once: BullMQ's
 * completion of the job goes right behind it on that connection, so Redis runs the landing first (a
 * completed job's call has landed, for a turn waiting on it too) and the two share one round trip.
 * Its reply is handled here. A landing that fails while the completion went through (a script error,
 * not a lost connection, which fails both) leaves the call running: the sweeper picks it up as a cut.
 */
function landBehindCompletion(landing: Promise<string>, landed: () => void, logger: LineLogger): void {
  landing.then(landed, (error: unknown) => {
    if (error instanceof FencedError) {
      countFenced()
      return logger.warn({ err: error }, 'attempt was superseded by a newer one; it wrote nothing more')
    }
    logger.error({ err: error }, 'the landing of this call failed after its job completed; the sweeper picks the call up again as a cut')
  })
}

/**
 * What this attempt comes to: the tool's outcome, the interrupted error of a cut call, or a park; and
 * how its tool ended (ToolEnd): 'unknown' when it was cut, or ended by its turn or its time limit
 * while the tool ran (a rerun keeps such a `never` call, R19).
 */
async function attemptOutcome(
  call: ToolCall & { context: unknown },
  begin: BeginResult,
  log: SessionLog,
  deps: ToolJobDeps,
  logger: LineLogger,
  attempt: Attempt,
  hold: AttemptHold | undefined,
): Promise<{ outcome: CallOutcome; secrets: SecretStore; duration: number; toolEnd?: ToolEnd }> {
  const { harness } = deps
  const tool = toolOfCall(harness, call.name, begin.version ?? '')
  const interrupted = { error: { message: harness.durability.interruptedToolResult, code: 'interrupted' } }
  let secrets: SecretStore
  try {
    // no resolver, no secrets: nothing to wait for
    secrets = harness.secrets ? await resolveSecrets(harness, call.sessionId) : NO_SECRETS
  } catch (error) {
    // a tool error, not a job failure whose retry would look like a cut; the resolver's message may
    // hold the very secrets it failed to return, so only the error's name reaches the log
    const name = resolverErrorName(error)
    logger.error({ errName: name }, 'the harness secrets resolver failed; the call gets a tool error')
    return {
      outcome: {
        error: { message: `The session secrets could not be resolved (${name}); the tool did not run.`, code: 'secrets_unavailable' },
      },
      secrets: new SecretStore(),
      duration: 0,
    }
  }
  const agent = isAgentTool(tool) ? tool : await agentToolOf(call, log, deps.agents)
  if (agent) {
    const outcome = await runAgentCall(agent, call, begin, { ...deps, log }, interrupted)
    return { outcome, secrets, duration: 0, toolEnd: outcome === interrupted ? 'unknown' : '' }
  }
  const beforeItsTool = begin.kind === 'cut' && needsApproval(tool) && !(await approvalDecided(log, call.toolCallId))
  if (beforeItsTool) logger.warn('call was cut while it asked for its approval; its tool never ran: it asks on')
  else if (begin.kind === 'cut') {
    // R10: nobody knows if a cut 'never' call finished; the model gets a tool error instead of a second run
    logger.warn('call was cut by a crash; replay is never: landing the interrupted tool error')
    return { outcome: interrupted, secrets, duration: 0, toolEnd: 'unknown' }
  }
  if (begin.kind === 'rerun') logger.warn('call was cut by a crash; replay is safe: running it again')
  if (needsApproval(tool)) {
    const decided = await decideApproval(harness, log, call, begin, secrets)
    if (decided !== 'approved') return { outcome: decided, secrets, duration: 0 }
  }
  const timeoutMs = timeoutOf(tool) ?? harness.durability.toolTimeoutMs
  // the harness's TanStack middleware runs around the tool (onBeforeToolCall, onAfterToolCall)
  const fence = { toolCallId: call.toolCallId, epoch: begin.epoch }
  const { outcome, duration } = await runWithMiddleware(
    harness,
    log,
    call,
    secrets,
    { abort: attempt, fence, hold },
    {
      run: (input) =>
        runCall(harness, log, callWithInput(call, input), begin, secrets, attempt, hold, {
          queues: deps.queuesOf(harness),
          logFor: deps.logFor,
          agents: deps.agents,
        }),
      limit: (running) => bounded(running, attempt, call.name, timeoutMs),
    },
  )
  if ('error' in outcome && (outcome.error.code === 'timeout' || outcome.error.code === 'aborted')) {
    logger.warn({ code: outcome.error.code }, 'tool call attempt ended before the tool did')
  }
  // ended by its turn or its time limit (bounded.ts): the tool may still be running, or may not have started yet
  return { outcome, secrets, duration, toolEnd: 'error' in outcome && attempt.aborted ? 'unknown' : '' }
}

type Attempt = AttemptAbort

/** The call as runCall takes it, with the input it runs with (the middleware's may differ): field by field, not a spread. */
function callWithInput(call: ToolCall & { context: unknown }, input: unknown): CallInput {
  const { sessionId, toolCallId, name, inputTooLarge, context } = call
  return { sessionId, toolCallId, name, input, inputTooLarge, context }
}

/** True when a parked call's wake-up already happened (its answer, its event, its child agent's settle, or a cancel). */
async function woken(p: Park, call: ToolCall, fence: Fence, deps: ToolJobDeps): Promise<boolean> {
  if ((await deps.logFor(call.sessionId).calls.getCall(fence.toolCallId))?.status === 'done') return true
  if (p.woken) return p.woken()
  if (p.kind === 'agent') return childSettled(deps.logFor, call)
  if (p.kind !== 'ask') return false
  return !!(await deps.logFor(call.sessionId).inputs.getQuestion(questionIdOf(fence.toolCallId, p.stepName)))?.answer.found
}
