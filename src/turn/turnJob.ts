import { randomBytes } from 'node:crypto'
import { DelayedError, WaitingChildrenError, type Job } from 'bullmq'
import type { Logger } from 'pino'
import type { Harness } from '../core/index.js'
import { contextOf, EventWaits, openMember, type InputState, type ModelUsage, type RecordOf, type SessionLog } from '../log/index.js'
import { enqueueCalls, wakeCall, type HarnessQueues, type TurnJobData } from '../queue/index.js'
import { toToolError, type AttemptHold } from '../tool/index.js'
import { foldTurn } from './fold.js'
import { textDeltas } from './deltas.js'
import { buildMessages, callModel } from './model.js'
import { beforeFinish } from './finish.js'
import { ModelCallError, refusedBeforeOutput } from './modelErrors.js'
import { decideModelError, waitForModelCall } from './modelRetry.js'
import type { FinishMessage } from '../core/index.js'
import { countModelUsage, modelSpan } from '../telemetry/index.js'
import { LimitKeyError, LockLostError, MiddlewareToolError } from '../errors/index.js'
import { MiddlewareAbort, modelCallHooks } from './middleware.js'
import { settleTurn } from './settle.js'
import { reportToRoot } from './childProgress.js'
import { turnView } from './view.js'
import { nextTurnMove } from './nextMove.js'
import { billedUsage, countUnloggedTry } from './spend.js'
import { endInFlightTry, reserveModelTry, sendingTry, settleModelTry, type InFlightTry } from './budget.js'
import { takeTurnSlot } from './limitedTurn.js'
import { holdingSlot, type HeldSlot } from '../limits/slot.js'
import { isContextOverflowError } from '../compaction/index.js'
import { compactBeforeModelCall, healContextOverflow, type TurnCompaction } from './compactTurn.js'

/** Passes in a row that change nothing before a turn attempt gives up (see the loop). */
const MAX_IDLE_PASSES = 5
/** A turn waiting in line (it should not have a job yet) checks again this often. */
const LINE_RECHECK_MS = 30_000

export interface TurnJobDeps {
  harness: Harness
  queues: HarnessQueues
  logFor(sessionId: string): SessionLog
  /** The queues of a harness by name (an agent tool's parent call may belong to another harness). */
  queuesByName(harnessName: string): HarnessQueues | undefined
  logger: Logger
  /** The process's abort signals by turn (`<sid>|<inputId>`): a settle heard from any process fires them. */
  aborts: { open(turn: string): { signal: AbortSignal; done(): void } }
  /** The job lock of this attempt: a model call starts only while it is held (call/attemptLock.ts). */
  lock?: AttemptHold | undefined
}

/**
 * The processor of a turn job. It folds the session log to decide its next action (call the model,
 * enqueue the batch, wait for it, settle), so any worker can continue any turn after a crash. While
 * its tool jobs run it waits as a BullMQ parent in waiting-children, holding no worker slot.
 */
export async function processTurnJob(job: Job<TurnJobData>, token: string | undefined, deps: TurnJobDeps): Promise<void> {
  const { harness } = deps
  const { sessionId, inputId } = job.data
  const log = deps.logFor(sessionId)
  const logger = deps.logger.child({ sessionId, inputId, attempt: job.attemptsMade + 1 })
  let input: InputState | null = null
  let held: HeldSlot | undefined
  // the model call try in flight: a throw while it is out counts it as cut, or releases its budget holds
  let inFlight: InFlightTry | undefined
  // an abort (or any settle) of this turn from any process stops its model call in flight
  const stop = deps.aborts.open(openMember(sessionId, inputId))
  const settle = async (record: Omit<RecordOf<'harness.input.settled'>, 'type' | 'inputId'>, last?: { usage?: ModelUsage }) => {
    if ((await settleTurn(log, deps.queues, harness, { type: 'harness.input.settled', inputId, ...record }, last)) !== 'settled') return // settled by abort or the sweeper
    logger.info({ outcome: record.outcome, error: record.error?.code }, 'turn settled')
    const error = record.error?.message === undefined ? {} : { error: record.error.message }
    reportToRoot(deps.logFor, log, input, {
      event: 'settled',
      outcome: record.outcome,
      ...(record.text ? { text: record.text } : {}),
      ...error,
    })
    // the turn of a child session answers an agent tool call: wake that call (it re-checks on its own too)
    const parent = (input ?? (await log.inputs.getInput(inputId)))?.parent
    const queues = parent && deps.queuesByName(parent.harness)
    if (parent && queues) await wakeCall(queues, parent.sessionId, parent.toolCallId)
  }
  try {
    input = await log.inputs.getInput(inputId)
    if (!input) throw new Error(`Turn ${inputId}: its harness.input is not in the log of session ${sessionId}`)
    // one turn of a session at a time: a turn that is not first in line (a stray job: turns waiting in
    // line are enqueued when the one before settles) waits and checks again; a steered input's turn
    // is the one it joined
    if (input.steerInto || input.status === 'settled') return
    // cancelOn: the turn waits for its events too (again on each run of the job: one HSET each)
    for (const { event, key } of harness.cancelOn) {
      let turnKey: unknown
      try {
        turnKey = key(input.text, contextOf(input))
      } catch (err) {
        logger.warn({ err, event }, 'cancelOn key function threw; this turn is not cancelled by that event')
      }
      if (typeof turnKey === 'string' && turnKey !== '')
        await new EventWaits(log.stream.redis, log.stream.prefix).watchTurn({ event, key: turnKey }, sessionId, inputId, harness.name)
    }
    const first = await log.inputs.firstInLine()
    if (first !== undefined && first !== inputId) {
      logger.debug({ first }, 'another turn of the session runs first; waiting in line')
      await job.moveToDelayed(Date.now() + LINE_RECHECK_MS, token)
      throw new DelayedError()
    }
    held = await takeTurnSlot(job, token, harness, deps.queues, input, logger)
    // a model call starts only while the attempt holds its job lock and its limit slot's lease
    const hold = held ? holdingSlot(deps.lock, held) : deps.lock
    // Every pass must move the turn on (a response or a result more); a pass that does not is retried
    // a few times (a child's landing may still be on its way), then the attempt fails: no loop spins.
    let lastProgress = -1
    let idlePasses = 0
    // beforeFinish's ephemeral messages: for the next model call only, never stored
    let ephemeral: FinishMessage[] = []
    // the response count at which an overflow was healed by a compaction: a second one there fails the turn
    let overflowHealedAt = -1
    for (;;) {
      // a lost attempt (a crash of its worker set, a lock taken over) moves the turn no further
      if (deps.lock?.lost) throw deps.lock.lost
      // the session's conversation (its projection: O(the conversation), not O(the log)); the fold
      // takes this turn's entries from its input on, the model calls the history before them too
      const { entryId } = input
      // inputs that joined the turn (busy 'steer') are part of its conversation
      const joined = harness.busy === 'steer' ? ((await log.inputs.getInput(inputId))?.steered ?? []) : []
      // with compaction, from the latest compaction's read pointer on (O(the view)); the whole
      // conversation for a rerun of a turn a compaction cut (its input lies before the pointer)
      const read = harness.compaction
        ? await log.inputs.conversation({ since: 'compaction' })
        : { entries: await log.inputs.conversation(), partial: false }
      const conversation = read.partial && !read.entries.some((e) => e.id === entryId) ? await log.inputs.conversation() : read.entries
      const start = conversation.findIndex((e) => e.id === entryId)
      const fold = foldTurn(start < 0 ? [] : conversation.slice(start), inputId)
      const view = turnView(conversation, inputId, joined)
      if (!fold.input) throw new Error(`Turn ${inputId}: its harness.input is not in the log of session ${sessionId}`)
      if (fold.settled) return
      const progress = fold.responses.length + fold.results.size + fold.turnRecords
      idlePasses = progress === lastProgress ? idlePasses + 1 : 0
      lastProgress = progress
      if (idlePasses >= MAX_IDLE_PASSES) {
        throw new Error(
          `Turn ${inputId} made no progress in ${idlePasses} passes (calls without a result: ${fold.pending.map((c) => c.toolCallId).join(', ') || 'none'}).`,
        )
      }
      if (idlePasses > 0) await new Promise((resolve) => setTimeout(resolve, 50 * idlePasses))
      const { durability } = harness
      const move = nextTurnMove(fold, view, {
        timeoutMs: durability.timeoutMs,
        maxAttempts: durability.maxAttempts,
        maxModelCalls: durability.maxModelCalls,
        crashes: job.stalledCounter ?? 0,
        attemptsMade: job.attemptsMade,
        now: Date.now(),
      })
      if (move.move === 'fail') return await settle(move.failure)
      if (move.move === 'finish') {
        const { last } = move
        const step = await beforeFinish(harness, log, fold, inputId, buildMessages(view.entries))
        if (step.action === 'fail') return await settle(step.failure)
        if (step.action === 'finish') return await settle({ outcome: 'completed', ...(last.text ? { text: last.text } : {}) }, last)
        ephemeral = step.ephemeral
        continue
      }
      if (move.move === 'enqueue') {
        await enqueueCalls(deps.queues, harness, sessionId, move.calls, {
          inputId,
          parent: { id: job.id!, queue: job.queueQualifiedName },
          // the turn's priority (its prompt's or the harness's): its calls inherit it
          ...(job.opts.priority ? { priority: job.opts.priority } : {}),
        })
        logger.debug({ calls: move.calls.length }, 'batch enqueued; waiting for its results')
        if (await job.moveToWaitingChildren(token!)) throw new WaitingChildrenError()
        continue
      }
      const { remaining } = move
      // a retry of the model call waits for its logged time; a paused turn for session.resume
      await waitForModelCall(job, token, log, fold, stop.signal)
      const signal = Number.isFinite(remaining) ? AbortSignal.any([stop.signal, AbortSignal.timeout(remaining)]) : stop.signal
      // the view over the compaction's budget is compacted first (docs/compaction.md)
      const compaction: TurnCompaction = { harness, log, logger, inputId, fold, conversation, joined, view, signal, hold }
      const compacting = await compactBeforeModelCall(compaction)
      if (compacting.next === 'settle') return await settle(compacting.failure)
      if (compacting.next === 'again') continue
      // the text streams to followers under a message id of this model call (a retry streams anew)
      const messageId = `${inputId}.${fold.responses.length}.${randomBytes(4).toString('hex')}`
      const messages = [...buildMessages(view.entries), ...ephemeral]
      // each budget of the turn reserves the call's estimate first (docs/spend.md, "Budgets")
      const reserved = await reserveModelTry(harness, log, { input, inputId, fold, logger }, messages)
      if ('exceeded' in reserved) {
        if (reserved.exceeded) return await settle(reserved.exceeded)
        continue // paused: the next pass parks the job until session.resume
      }
      const flight = (inFlight = reserved)
      const { modelTry } = flight
      const deltas = textDeltas((at, text) => {
        flight.output += text
        return log.stream.appendLive({ k: 'delta', m: messageId, inputId, at, text })
      })
      // middleware runs around each model call made (one made again after a crash runs it again)
      const hooks = await modelCallHooks(harness, log, {
        inputId,
        iteration: fold.responses.length,
        messageId,
        messages,
        context: contextOf(input),
      })
      // the try is marked on its input right before the request goes out (a cut one is counted then)
      const call = () => callModel(harness, messages, signal, deltas.push, hooks, sendingTry(harness, log, inputId, flight, hold))
      let response
      try {
        response = await modelSpan({ sessionId, inputId, iteration: fold.responses.length }, call).finally(() => deltas.close())
      } catch (error) {
        // the provider failed the call: turn.onModelError decides (not a BullMQ attempt)
        if (!(error instanceof ModelCallError) || signal.aborted) throw error
        // the failed try counts: what the provider reported, else an estimate (docs/spend.md)
        const { text, usage } = error.sofar
        inFlight = undefined
        const counted = await countUnloggedTry(harness, log, inputId, fold, refusedBeforeOutput(error) ? 'refused' : 'failed', {
          messages,
          output: text,
          reported: usage,
          tryId: modelTry.id,
        })
        await flight.marked
        await settleModelTry(log, modelTry, counted)
        // a context the provider refused for its size: compact once and call again (docs/compaction.md)
        if (harness.compaction && isContextOverflowError(error.info)) {
          const healing = await healContextOverflow(compaction, error, overflowHealedAt === fold.responses.length)
          if (healing.healed) overflowHealedAt = fold.responses.length
          if (healing.next === 'settle') return await settle(healing.failure)
          continue
        }
        const { decision, failure, policyError } = await decideModelError(harness, log, fold, inputId, error)
        logger.warn({ err: error.info, decision, retries: fold.retries }, 'model call failed')
        if (failure?.error?.code === 'model_policy_error')
          logger.error({ err: policyError, policy: failure.error.message }, 'turn.onModelError failed; the turn fails (model_policy_error)')
        if (failure) return await settle(failure)
        continue
      }
      // counted with the model, its cost, or an estimate when the provider reported nothing (docs/spend.md)
      response.usage = billedUsage(harness, response.usage, { messages, output: response.text ?? '' })
      // lost while the model answered: its response is not logged (a crashed worker writes nothing more)
      if (deps.lock?.lost) throw deps.lock.lost
      inFlight = undefined
      const logged = await log.inputs.logModelResponse(
        inputId,
        { ...response, ...(response.text ? { messageId } : {}), ...(harness.busy === 'steer' ? { joined: view.unseenJoined } : {}) },
        fold.responses.length,
        harness.name,
        modelTry.id,
      )
      await flight.marked
      await settleModelTry(log, modelTry, response.usage)
      if (!logged) {
        // another run of this turn logged first: this try was made all the same; fold again
        const sent = { messages, output: response.text ?? '', reported: response.usage, tryId: modelTry.id }
        await countUnloggedTry(harness, log, inputId, fold, 'dropped', sent)
        continue
      }
      countModelUsage(harness.name, response.usage)
      const tools = response.toolCalls.map((c) => c.name)
      reportToRoot(deps.logFor, log, input, { event: 'response', ...(response.text ? { text: response.text } : {}), toolCalls: tools })
      ephemeral = []
      logger.debug({ toolCalls: response.toolCalls.length }, 'model responded')
      // (with 'steer', fold again first: an input that joined meanwhile gets another model call)
      if (response.toolCalls.length === 0 && harness.busy !== 'steer' && !harness.turn.beforeFinish) {
        return await settle({ outcome: 'completed', ...(response.text ? { text: response.text } : {}) }, response)
      }
    }
  } catch (error) {
    // a try stopped after its request went out (an abort, a timeout) counts; one never sent releases its holds
    if (inFlight)
      await endInFlightTry(harness, log, inputId, inFlight).catch((err: unknown) => logger.warn({ err }, 'counting a cut try failed'))
    if (error instanceof WaitingChildrenError || error instanceof DelayedError) throw error
    // once lost, any error of the attempt is the loss's (a write refused for its token): it settles nothing
    if (error instanceof LockLostError || deps.lock?.lost) {
      logger.warn({ err: error }, 'turn attempt lost its job lock to another worker; it made no model call and wrote nothing more')
      // the job is another worker's now (or the stalled check's): BullMQ leaves it alone
      throw new DelayedError()
    }
    // the turn settled elsewhere (session.abort, a timeout by the sweeper) and its model call was stopped
    if (stop.signal.aborted && (await log.inputs.getInput(inputId))?.status === 'settled') return
    // a middleware offered the model a tool this harness cannot run: no attempt would do better
    if (error instanceof MiddlewareToolError || error instanceof LimitKeyError)
      return await settle({ outcome: 'failed', error: { code: error.code, message: error.message } })
    // a model-call hook called ctx.abort(reason): the turn ends as aborted (no call of it is parked or running now)
    if (error instanceof MiddlewareAbort) return await settle({ outcome: 'aborted', error: { code: 'aborted', message: error.reason } })
    const last = job.attemptsMade + 1 >= harness.durability.maxAttempts
    logger.warn({ err: error, lastAttempt: last }, 'turn attempt failed')
    if (!last) throw error
    const timedOut = error instanceof DOMException && error.name === 'TimeoutError'
    await settle({
      outcome: 'failed',
      error: timedOut
        ? { code: 'timeout', message: `Turn exceeded timeoutMs (${harness.durability.timeoutMs} ms).` }
        : {
            code: 'attempts_exhausted',
            message: `Turn failed after ${harness.durability.maxAttempts} attempts: ${toToolError(error).message}`,
          },
    })
  } finally {
    stop.done()
    held?.release().catch((err: unknown) => logger.warn({ err }, 'limit slot release failed; it frees itself when its lease expires'))
  }
}
