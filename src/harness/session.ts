import { randomUUID } from 'node:crypto'
import {
  InputConflictError,
  ToolCallConflictError,
  ToolCallError,
  SessionBusyError,
  ShardCountError,
  StorageError,
  UnknownInputError,
  UnknownToolCallError,
  UnknownToolError,
} from '../errors/index.js'
import { assertInputId, assertToolCallId, messageKey, type CallMarks, type Question, type RecordOf, SessionLog } from '../log/index.js'
import { followEvents, type EventsOptions, type SessionEvent } from '../events/follow.js'
import { toolNames, toolOf, type Harness } from '../core/index.js'
import { enqueueCall, enqueueTurn, wakeTurn, type HarnessQueues } from '../queue/index.js'
import { checkPrompt, type PromptOptions } from './promptOptions.js'
import { settleTurn } from '../turn/index.js'
import { encodeChecked, toJsonCopy } from '../tool/index.js'
import { assertNoSecrets } from './callerSecrets.js'
import { cancelParkedCalls, cancelTree } from './cancel.js'
import { rerunTurn, type RerunOptions } from './rerun.js'
import { answerQuestion } from './answer.js'
import { checkPrincipal } from './tags.js'
import { usageOf, type SessionUsage } from './usage.js'
import { settledFrom, toSettled, type Settled } from './settledOf.js'
import { WaitCancel, type Notifier } from './notifier.js'
import { logReader, type LogReader } from './logReader.js'
import { compactSession, resetSession, type Compacted, type ResetDone } from './compactSession.js'
import type { LocalLane } from '../lane/index.js'
import type { AgentHost } from '../fanout/index.js'

export type { Settled } from './settledOf.js'
export type { SessionUsage } from './usage.js'
export type { LogReader } from './logReader.js'

export interface SessionDeps {
  harness: Harness
  log: SessionLog
  queues: HarnessQueues
  notifier: Notifier
  /** How a new runTool call's request and job are sent: the local lane, or BullMQ's public path (src/lane/). */
  lane: LocalLane
  /** Another session of the host (an agent tool call's child, whose turn an abort ends too). */
  open(harness: Harness, sessionId: string): Session
  /** The host's harnesses, and how a child agent's turn is aborted (an abort ends its children's turns too). */
  agents: AgentHost
  /**
   * Resolves once the deployment's shard count is known to be this host's (checked once a host);
   * rejects with ShardCountError when it is not, so a host with another count writes nothing. Then
   * `callMarks` are known: a new runTool call's job gets one (src/log/callMarks.ts). Undefined, no
   * promise to wait for, once it is known. */
  deployment(): Promise<void> | undefined
  callMarks?(): CallMarks | undefined
}

/** A cheap handle on one session: any process, any machine. */
export class Session {
  readonly sessionId: string
  /** The session's log, read-only. */
  readonly log: LogReader

  constructor(private readonly deps: SessionDeps) {
    this.sessionId = deps.log.sessionId
    this.log = logReader(deps.log)
  }

  /** Before a write: the deployment's shard count is this host's (ShardCountError), or Redis failed checking (StorageError). */
  private checkDeployment(): Promise<void> | undefined {
    return this.deps.deployment()?.catch((error: unknown) => {
      throw error instanceof ShardCountError ? error : new StorageError('the shard count check', this.sessionId, error)
    })
  }

  /**
   * Logs the input once per inputId and enqueues its turn (R15: the same inputId twice runs once).
   * @example
   * ```ts
   * const { inputId } = await session.prompt('Refund order 42', { inputId: `refund-${requestId}` })
   * const { outcome, text } = await session.settled(inputId)
   * ```
   */
  async prompt(text: string, options: PromptOptions = {}): Promise<{ inputId: string }> {
    const { harness } = this.deps
    const { inputId, priority, context, tags } = await checkPrompt(harness, this.sessionId, text, options)
    await this.checkDeployment()
    const added = await this.deps.log.inputs.addInput(inputId, text, harness.name, {
      busy: harness.busy,
      context,
      ...tags,
      ...(priority === undefined ? {} : { priority }),
    })
    if (added.status === 'conflict') throw new InputConflictError(inputId)
    if (added.status === 'busy') throw new SessionBusyError(this.sessionId, added.running)
    // a turn waiting in line is enqueued when the turns before it settle; a steered input has none.
    // Enqueued again after 'exists' too: a crash between the log write and the enqueue loses no turn,
    // and BullMQ ignores a job id that exists
    const runsNow = added.status === 'added' ? added.disposition === 'run' : !added.settled && added.first
    if (runsNow) await enqueueTurn(this.deps.queues, harness, this.sessionId, inputId, priority ?? harness.priority)
    return { inputId }
  }

  /** Resolves when the turn of `inputId` settles (completed, failed or aborted); UnknownInputError at once for an input never given. */
  async settled(inputId: string, options: { timeoutMs?: number } = {}): Promise<Settled> {
    assertInputId(inputId)
    if (!(await this.deps.log.inputs.getInput(inputId))) throw new UnknownInputError(inputId)
    const { log } = this.deps
    const check = async () => {
      const settled = await log.inputs.getSettled(inputId)
      return settled ? toSettled(settled) : undefined
    }
    return this.deps.notifier.wait(messageKey('input', this.sessionId, inputId), check, `Turn ${inputId}`, {
      ...options,
      fromPayload: (payload) => settledFrom(log, payload),
    })
  }

  /**
   * Ends a turn now: it settles as `aborted` (settled() resolves with it) and makes no more model
   * calls. Its running calls get `ctx.abortSignal` and land an `aborted` tool error; its parked calls
   * (sleep, ask, agent child) land a `cancelled` tool error, their questions close and an agent
   * call's child turn is aborted too. Returns false when the turn had settled already; aborting an
   * aborted or failed turn (a timeout) again ends any call it left parked (a cancel a crash cut short).
   */
  async abort(inputId: string, reason = 'Aborted by the caller.', options: { principal?: string } = {}): Promise<boolean> {
    assertInputId(inputId)
    const { log, harness, queues } = this.deps
    if (options.principal !== undefined) checkPrincipal(options.principal)
    await this.checkDeployment()
    const status = await settleTurn(log, queues, harness, {
      type: 'harness.input.settled',
      inputId,
      outcome: 'aborted',
      error: { code: 'aborted', message: reason },
      ...(options.principal !== undefined ? { principal: options.principal } : {}),
    })
    if (status === 'unknown') throw new UnknownInputError(inputId)
    const settled = status === 'settled' ? null : await log.inputs.getSettled(inputId)
    if (settled?.outcome === 'completed') return false
    // settled already as aborted or failed (a timeout): its parked calls end all the same
    const why = settled?.error?.message ?? reason
    await cancelParkedCalls({ harness, log, queues, agents: this.deps.agents }, inputId, why)
    return status === 'settled'
  }

  /**
   * Cancels a call and all it started, at any depth (docs/fan-out.md "Cancel and failure"); the call
   * lands `cancelled` if parked, and true comes back. UnknownToolCallError for a call never requested.
   */
  async cancelCall(toolCallId: string, reason = 'Cancelled by the caller.'): Promise<boolean> {
    assertToolCallId(toolCallId)
    const { log, harness, queues } = this.deps
    await this.checkDeployment()
    if (!(await log.calls.getCall(toolCallId)) && !(await log.calls.isRequested(toolCallId))) throw new UnknownToolCallError(toolCallId)
    return cancelTree({ harness, log, queues, agents: this.deps.agents }, toolCallId, reason)
  }

  /**
   * Goes on with a turn paused by `onExhausted: 'pause'` (its model call's retries ran out): the
   * model call is made again with a fresh retry count, and the turn's kept results stay kept.
   * Returns false when the turn is not paused (running, or settled); UnknownInputError for no such input.
   */
  async resume(inputId: string): Promise<boolean> {
    assertInputId(inputId)
    const { log, harness, queues } = this.deps
    await this.checkDeployment()
    const resumed = await log.inputs.logTurnRecord({ type: 'harness.turn.resumed', inputId, at: Date.now() })
    if (resumed.status === 'unknown') throw new UnknownInputError(inputId)
    if (resumed.status !== 'ok') return false
    await wakeTurn(queues, harness, this.sessionId, inputId, (await log.inputs.getInput(inputId))?.priority)
    return true
  }

  /** Runs a failed or aborted turn again: kept results stay kept (R19), failed calls and the model go on (harness/rerun.ts). */
  async rerun(inputId: string, options?: RerunOptions): Promise<boolean> {
    await this.checkDeployment()
    return rerunTurn(this.deps, inputId, options)
  }

  /**
   * Runs one tool call as a batch of one, with no model. Resolves with the kept result or rejects
   * with ToolCallError. Pass a toolCallId to make the call idempotent across retries of the caller.
   * @example
   * ```ts
   * const receipt = await session.runTool({ name: 'charge', input: { orderId: '42' }, toolCallId: `charge-${requestId}` })
   * ```
   */
  async runTool(call: { name: string; input: unknown; toolCallId?: string }, options: { timeoutMs?: number } = {}): Promise<unknown> {
    const { harness, log, notifier, queues } = this.deps
    if (!toolOf(harness, call.name)) throw new UnknownToolError(call.name, toolNames(harness))
    if (call.toolCallId !== undefined) assertToolCallId(call.toolCallId)
    const toolCallId = call.toolCallId ?? `run-${randomUUID()}`
    // checked before anything is written or enqueued: a bad input loses nothing and starts nothing
    const what = `Input of tool "${call.name}"`
    const input = toJsonCopy(call.input, what)
    const encoded = encodeChecked(input, what, harness.durability.maxValueBytes)
    const scanning = assertNoSecrets(harness, this.sessionId, { what, encoded })
    if (scanning) await scanning
    const checking = this.checkDeployment()
    if (checking) await checking
    // a generated id is new: no call to look up, and no result to check for before the first message
    const fresh = call.toolCallId === undefined
    // the caller's own id: the same call again (a retry) waits for it; another call under it is refused
    if (!fresh && (await log.calls.requestCall(toolCallId, call.name, input)) === 'conflict') throw new ToolCallConflictError(toolCallId)
    const subscribing = notifier.ready()
    if (subscribing) await subscribing
    let requested = !fresh
    const cancel = new WaitCancel()
    const landed = notifier.wait(
      messageKey('call', this.sessionId, toolCallId),
      async () => {
        const state = await log.calls.getCall(toolCallId)
        if (!state && requested && !(await log.calls.callExists(toolCallId))) throw new UnknownToolCallError(toolCallId)
        return state?.status === 'done' ? state.result : undefined
      },
      `Tool call ${toolCallId}`,
      {
        ...options,
        fresh,
        cancel,
        fromPayload: (payload) => log.stream.openedRecord<RecordOf<'harness.tool.result'>>(JSON.parse(payload)),
      },
    )
    landed.catch(() => {}) // awaited below; this only keeps an enqueue failure from leaving it unhandled
    // the request (listing the session for retention) is logged before the job exists: a job begins
    // only as its logged call (src/lane/localLane.ts). A caller's retry adds it again: a no-op, or a lost job's repair
    const job = { toolCallId, name: call.name, input }
    const enqueue = fresh
      ? this.deps.lane.enqueueNewCall(queues, harness, log, job, this.deps.callMarks?.())
      : enqueueCall(queues, harness, this.sessionId, job)
    await enqueue.catch((error) => {
      cancel.cancel()
      throw error
    })
    requested = true
    const result = await landed
    if (result.error) throw new ToolCallError(call.name, toolCallId, result.error)
    return result.result
  }

  /**
   * The session's events as they happen, from any process: AG-UI chunks of `@tanstack/ai` (RUN_STARTED,
   * TEXT_MESSAGE_* streamed while the model writes, TOOL_CALL_*, TOOL_CALL_RESULT, RUN_FINISHED /
   * RUN_ERROR) and harness events as CUSTOM (`harness.tool.step`, `harness.tool.ask`, ...), each with a
   * cursor; `from: cursor` resumes right after that event, exactly once and in order.
   */
  events(options?: EventsOptions): AsyncGenerator<SessionEvent> {
    return followEvents(this.deps.log, options)
  }

  /**
   * The session's spend (docs/spend.md): `{ total, byModel, byPrincipal, turns }`, each with calls,
   * tokens (prompt, completion, total, cached, cache write, reasoning), cost in USD and the calls whose
   * counts are estimated. Every model call try counts once, failed and cut ones too. One Redis command.
   */
  usage(): Promise<SessionUsage> {
    return usageOf(this.deps.log)
  }

  /**
   * Compacts the session's model view now (docs/compaction.md), with the harness's strategy: the
   * turns before the running one (all, between turns) that it cuts leave the view of every later
   * model call; the log keeps them (R21). Recorded with `principal`. A harness without `compaction`
   * is a CompactionConfigError; a summary call that fails (after `turn.onModelError`'s short
   * retries) a CompactionFailedError.
   */
  compact(options: { principal?: string } = {}): Promise<Compacted> {
    return compactSession({ ...this.deps, checkDeployment: () => this.checkDeployment() }, options)
  }

  /**
   * Starts the model's context over (docs/compaction.md, "Reset"): the next model call sees the note
   * (none: nothing) in place of every turn before the running one, plus what every call is sent (system
   * prompts, tools); the transcript keeps everything (R21). Recorded with `principal`, with or
   * without `compaction`. A note holding a session secret is refused (SecretInValueError).
   */
  reset(note?: string, options: { principal?: string } = {}): Promise<ResetDone> {
    return resetSession({ ...this.deps, checkDeployment: () => this.checkDeployment() }, note, options)
  }

  /** Open step.ask questions of this session; `sealed: 'mask'`: a message this process has no key for reads as [encrypted]. */
  questions(options: { sealed?: 'throw' | 'mask' } = {}): Promise<Question[]> {
    return this.deps.log.inputs.openQuestions(Date.now(), options.sealed)
  }

  /**
   * Answers a question from any process: validated against the question's logged JSON Schema (a bad
   * answer is refused with the validation message, nothing logged), the first valid answer wins, then
   * the parked job is promoted so it runs at once.
   */
  async answer(questionId: string, value: unknown, options: { principal?: string } = {}): Promise<void> {
    await answerQuestion({ ...this.deps, checkDeployment: async () => this.checkDeployment() }, questionId, value, options)
  }
}
