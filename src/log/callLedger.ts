import { FencedError } from '../errors/index.js'
import { callFingerprint } from './callIds.js'
import { messageKey, openMember } from './formats.js'
import { requestField, retryField, stepField } from './keys.js'
import { hasType, type LogRecord, type RecordOf, type ToolErrorPayload } from './records.js'
import { type InputState, type Question, type StepLookup, type StoredValue } from './inputs.js'
import { SessionActions } from './actions.js'
import { encodeRecord } from './stream.js'
import { decodeValue, encodeValue } from './stepValues.js'
import type { LandArgs } from './commands/index.js'
import type { BeginResult, CallOwner, CallState, Fence, LoggedCall, RequestBegin, StepRetryState, StoredCallState } from './callState.js'

/**
 * The session log of one session: its stream (stream.ts), inputs and questions (inputs.ts), and here
 * the call ledger: the state of every tool call, its stored steps, and the fenced writes of an
 * attempt (begin, step, question, staged records, park, land). Every multi-key write is one named Lua
 * script (src/log/commands) whose first act is the fence check.
 */
export class SessionLog extends SessionActions {
  /**
   * Logs a runTool request under its id once ('exists': the same tool and input, 'conflict': another),
   * listing its session for retention. `begin`: a new call is begun in the same write (its first
   * delivery skips its begin: callMarks.ts), for the harness named, with the fingerprint made already.
   */
  async requestCall(toolCallId: string, name: string, input: unknown, begin?: RequestBegin): Promise<'added' | 'exists' | 'conflict'> {
    const record = encodeRecord({ type: 'harness.tool.requested', toolCallId, name, input })
    const fingerprint = begin?.fingerprint ?? callFingerprint(name, input)
    const [status] = await this.script(
      'requestCall',
      [this.keys.calls, this.keys.log, this.index.sessions, this.index.openCalls],
      [
        toolCallId,
        fingerprint,
        record,
        Date.now(),
        this.sessionId,
        begin?.harness ?? '',
        name,
        openMember(this.sessionId, toolCallId),
        begin?.version ?? '',
      ],
    )
    return status
  }

  /** True when a call of this id was requested or logged in a model response. */
  async callExists(toolCallId: string): Promise<boolean> {
    return (await this.command('getCall', () => this.redis.hexists(this.keys.calls, requestField(toolCallId)))) === 1
  }

  /** O(1) lookup of a stored step (HGET on the steps hash; the stream is not read). */
  async getStep(toolCallId: string, name: string): Promise<StepLookup> {
    const stored = await this.command('getStep', () => this.redis.hget(this.keys.steps, stepField(toolCallId, name)))
    return stored === null ? { found: false } : { found: true, value: decodeValue(stored) }
  }

  /** A step's stored value and its retry state (R16), in one HMGET: what a step with a retry policy resumes from. */
  async getStepAndRetry(toolCallId: string, name: string): Promise<StepLookup & { retry?: StepRetryState }> {
    const [stored, retry] = await this.command('getStep', () =>
      this.redis.hmget(this.keys.steps, stepField(toolCallId, name), retryField(toolCallId, name)),
    )
    if (stored !== null) return { found: true, value: decodeValue(stored) }
    return retry === null ? { found: false } : { found: false, retry: JSON.parse(retry) as StepRetryState }
  }

  /** Stores a failed try of a step (fenced), with its harness.tool.step.retry record; a state with as many tries is kept. */
  async saveStepRetry(fence: Fence, name: string, state: StepRetryState, record: RecordOf<'harness.tool.step.retry'>): Promise<void> {
    const reply = await this.script(
      'saveStepRetry',
      [this.keys.calls, this.keys.steps, this.keys.log],
      [fence.toolCallId, fence.epoch, retryField(fence.toolCallId, name), JSON.stringify(state), state.a, encodeRecord(record)],
      true,
    )
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
  }

  /**
   * The call as the record that asked for it holds it (the turn's model response, or runTool's
   * request): its tool, input, turn and the size of an input too large to keep. Reads the log (from
   * the turn's input when `inputId` is given): for rare repairs, not for a hot path.
   */
  async findLoggedCall(toolCallId: string, inputId?: string): Promise<LoggedCall | undefined> {
    const input = inputId ? await this.getInput(inputId) : null
    for (const { record } of await this.read(input ? { from: input.entryId } : {})) {
      if (hasType(record, 'harness.tool.requested') && record.toolCallId === toolCallId) return { name: record.name, input: record.input }
      const call = hasType(record, 'harness.model.response') ? record.toolCalls.find((c) => c.toolCallId === toolCallId) : undefined
      if (call && hasType(record, 'harness.model.response')) {
        const tooLarge = call.inputTooLarge === undefined ? {} : { inputTooLarge: call.inputTooLarge }
        return { name: call.name, input: call.input, inputId: record.inputId, ...tooLarge }
      }
    }
    return undefined
  }

  async getCall(toolCallId: string): Promise<CallState | null> {
    const [state, result] = await this.command('getCall', () => this.redis.hmget(this.keys.calls, toolCallId, `${toolCallId}\0result`))
    if (!state) return null
    const s = JSON.parse(state) as StoredCallState
    return {
      status: s.s,
      epoch: s.e,
      attempt: s.a,
      replay: s.r,
      name: s.n,
      ...(s.v ? { version: s.v } : {}),
      ...(s.h ? { owner: { harness: s.h, ...(s.i ? { inputId: s.i } : {}) } } : {}),
      ...(result ? { result: JSON.parse(result) as RecordOf<'harness.tool.result'> } : {}),
    }
  }

  /** `owner` is kept in the call state so the sweeper can enqueue the call again if its job is lost. */
  async beginCall(toolCallId: string, name: string, replay: 'safe' | 'never', owner?: CallOwner): Promise<BeginResult> {
    return (await this.begin(toolCallId, name, replay, owner, '')) as BeginResult
  }

  /**
   * beginCall of the call a tool job names, only if it is the logged one: `fingerprint` (callFingerprint
   * of the job's tool, input and turn) must be what the logged call wrote, checked in the same script
   * (no extra round trip). 'unverified', nothing written, when it is not or the call was never logged.
   */
  async beginLoggedCall(
    toolCallId: string,
    name: string,
    replay: 'safe' | 'never',
    owner: CallOwner,
    fingerprint: string,
  ): Promise<BeginResult | 'unverified'> {
    return this.begin(toolCallId, name, replay, owner, fingerprint)
  }

  private async begin(toolCallId: string, name: string, replay: 'safe' | 'never', owner: CallOwner | undefined, fingerprint: string) {
    const reply = await this.script(
      'beginCall',
      [this.keys.calls, this.keys.log, this.stagedKey(toolCallId), this.index.openCalls, this.keys.inputs],
      [
        toolCallId,
        name,
        replay,
        Date.now(),
        openMember(this.sessionId, toolCallId),
        owner?.harness ?? '',
        owner?.inputId ?? '',
        fingerprint,
        owner?.version ?? '',
      ],
    )
    if (reply[0] === 'unverified') return 'unverified'
    const [kind, epoch, attempt, input, version] = reply
    const begun = { kind, epoch: Number(epoch), attempt: Number(attempt), ...(version ? { version } : {}) }
    return owner?.inputId && kind !== 'done' ? { ...begun, input: input ? (JSON.parse(input) as InputState) : null } : begun
  }

  /**
   * Stores a step value with its log record (fenced). Returns the stored value: ours, or the one a
   * racing attempt stored first. `value === undefined` stores "done, no value". `encoded`: the
   * value's JSON text when the caller has it already (JSON.stringify(value)), so it is not made twice.
   */
  async saveStep(fence: Fence, name: string, value: unknown, record: LogRecord, encoded?: string): Promise<StoredValue> {
    const reply = await this.script(
      'saveStep',
      [this.keys.calls, this.keys.steps, this.keys.log],
      [fence.toolCallId, fence.epoch, stepField(fence.toolCallId, name), encoded ?? encodeValue(value), encodeRecord(record)],
      true,
    )
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
    return reply[0] === 'exists' ? { found: true, value: decodeValue(reply[1]) } : { found: true, value }
  }

  /** Logs a question once (fenced) as the step `name`; returns the stored step value. */
  async askQuestion(fence: Fence, name: string, question: Question): Promise<StoredValue> {
    const value = { questionId: question.questionId }
    const reply = await this.script(
      'askQuestion',
      [this.keys.calls, this.keys.steps, this.keys.log, this.keys.questions, this.index.openQuestions],
      [
        fence.toolCallId,
        fence.epoch,
        stepField(fence.toolCallId, name),
        encodeValue(value),
        encodeRecord({ type: 'harness.tool.ask', ...question }),
        question.questionId,
        JSON.stringify(question),
        Date.now(),
        openMember(this.sessionId, question.questionId),
      ],
      true,
    )
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
    return reply[0] === 'exists' ? { found: true, value: decodeValue(reply[1]) } : { found: true, value }
  }

  /** How many records the call has staged (a middleware hook's records are staged after the tool's). */
  async stagedCount(toolCallId: string): Promise<number> {
    return this.command('stagedCount', () => this.redis.llen(this.stagedKey(toolCallId)))
  }

  /** Stages records at positions `first..` of the call's appends (positions already staged are skipped). */
  async stageRecords(fence: Fence, records: LogRecord[], first = 0): Promise<void> {
    const reply = await this.script(
      'stageRecords',
      [this.keys.calls, this.stagedKey(fence.toolCallId)],
      [fence.toolCallId, fence.epoch, first, ...records.map(encodeRecord)],
      true,
    )
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
  }

  /** Marks the attempt parked (sleep/ask): its next begin is a planned resume, not a cut. */
  async parkCall(fence: Fence, kind: RecordOf<'harness.tool.suspended'>['kind'], until: number): Promise<void> {
    const record = encodeRecord({ type: 'harness.tool.suspended', toolCallId: fence.toolCallId, kind, until })
    const reply = await this.script('parkCall', [this.keys.calls, this.keys.log], [fence.toolCallId, fence.epoch, record], true)
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
  }

  /** Lands the kept result with the staged records, atomically and fenced. */
  async landResult(fence: Fence, name: string, outcome: { result?: unknown; error?: ToolErrorPayload }): Promise<string> {
    const { toolCallId } = fence
    const record = encodeRecord({
      type: 'harness.tool.result',
      toolCallId,
      name,
      ...(outcome.error ? { error: outcome.error } : { result: outcome.result }),
    })
    const reply = await this.script(
      'landResult',
      [this.keys.calls, this.keys.log, this.stagedKey(toolCallId), this.index.openCalls, this.keys.conversation],
      this.landArgs(fence, record),
      true,
    )
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
    return reply[1]
  }

  /** The stored ids of every call the model gave the turn of `inputId`, in log order. */
  async turnCallIds(inputId: string): Promise<string[]> {
    return (await this.conversation()).flatMap(({ record }) =>
      hasType(record, 'harness.model.response') && record.inputId === inputId ? record.toolCalls.map((c) => c.toolCallId) : [],
    )
  }

  /**
   * Cancels a parked call (its turn was aborted): lands `error` as its result and closes the questions
   * named, in one write fenced on the parked `epoch` seen. 'running' / 'done': the call woke or landed
   * meanwhile and ends on its own; 'moved': it parked again under a newer epoch, look again.
   */
  async cancelCall(
    fence: Fence,
    name: string,
    questionIds: string[],
    error: ToolErrorPayload,
  ): Promise<'ok' | 'done' | 'running' | 'moved' | 'unknown'> {
    const { toolCallId } = fence
    const record = encodeRecord({ type: 'harness.tool.result', toolCallId, name, error })
    const idx = this.index
    const [status] = await this.script(
      'cancelCall',
      [
        this.keys.calls,
        this.keys.log,
        this.stagedKey(toolCallId),
        idx.openCalls,
        this.keys.questions,
        idx.openQuestions,
        this.keys.conversation,
      ],
      [...this.landArgs(fence, record), ...questionIds.flatMap((q) => [q, openMember(this.sessionId, q)])],
    )
    return status
  }

  /** The landing of a call's result (includes/land.lua): what it writes under which epoch, and whom it wakes. */
  private landArgs(fence: Fence, record: string): LandArgs {
    const { toolCallId, epoch } = fence
    return [
      toolCallId,
      epoch,
      record,
      openMember(this.sessionId, toolCallId),
      this.publish,
      this.index.events,
      messageKey('call', this.sessionId, toolCallId),
    ]
  }

  stagedKey(toolCallId: string): string {
    return `${this.keys.staged}:${toolCallId}`
  }
}

function fencedError(fence: Fence, current: number): FencedError {
  return new FencedError(fence.toolCallId, fence.epoch, current < 0 ? null : current)
}
