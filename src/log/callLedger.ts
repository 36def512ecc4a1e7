import { FencedError } from '../errors/index.js'
import { messageKey, openMember } from './formats.js'
import { requestField, retryField, stepField } from './keys.js'
import { type LogRecord, type RecordOf, type ToolErrorPayload } from './records.js'
import type { Question } from './inputs.js'
import { encodeRecord, type LogStream } from './stream.js'
import type { ScriptKeys } from './sessionLayout.js'
import { decodeValue, encodeValue, type StepLookup, type StoredValue } from './stepValues.js'
import { scripts, type ScriptInput, type ToolEnd } from './commands/index.js'
import { startsWithNul } from './sealedRecords.js'
import { askArgs, openRetryState, openStoredStep, sealedStep } from './sealedSteps.js'
import { requestArgs, requestedInput } from './callStart.js'
import {
  beginResultOf,
  callStateOf,
  type BeginResult,
  type CallOwner,
  type CallState,
  type Fence,
  type ParkOptions,
  type RequestBegin,
  type StepRetryState,
} from './callState.js'

type SuspendedKind = RecordOf<'harness.tool.suspended'>['kind']

/**
 * The call ledger of one session, a part of SessionLog (sessionLog.ts) over the session's stream: the
 * state of every tool call, its stored steps, and the fenced writes of an attempt (begin, step,
 * question, staged records, park, land). Every multi-key write is one named Lua script
 * (src/log/commands) whose first act is the fence check.
 */
export class CallLedger {
  constructor(readonly stream: LogStream) {}

  /**
   * Logs a runTool request under its id once ('exists': the same tool and input, 'conflict': another),
   * listing its session for retention. `begin`: a new call is begun in the same write (its first
   * delivery skips its begin: callMarks.ts), for the harness named, with the fingerprint made already.
   */
  async requestCall(toolCallId: string, name: string, input: unknown, begin?: RequestBegin): Promise<'added' | 'exists' | 'conflict'> {
    const args = requestArgs(this.stream, toolCallId, name, input, begin, await requestedInput(this.stream, input))
    const [status] = await this.stream.script(scripts.requestCall, { keys: this.stream.scriptKeys, args })
    return status
  }

  /** True when a call of this id was requested or logged in a model response. */
  async callExists(toolCallId: string): Promise<boolean> {
    return (await this.stream.command('getCall', () => this.stream.redis.hexists(this.stream.keys.calls, requestField(toolCallId)))) === 1
  }

  /** O(1) lookup of a stored step (HGET on the steps hash; the stream is not read). */
  async getStep(toolCallId: string, name: string): Promise<StepLookup> {
    const stored = await this.stream.command('getStep', () => this.stream.redis.hget(this.stream.keys.steps, stepField(toolCallId, name)))
    return stored === null ? { found: false } : { found: true, value: await openStoredStep(this.stream, stored) }
  }

  /** A step's stored value and its retry state (R16), in one HMGET: what a step with a retry policy resumes from. */
  async getStepAndRetry(toolCallId: string, name: string): Promise<StepLookup & { retry?: StepRetryState }> {
    const [stored, retry] = await this.stream.command('getStep', () =>
      this.stream.redis.hmget(this.stream.keys.steps, stepField(toolCallId, name), retryField(toolCallId, name)),
    )
    if (stored !== null) return { found: true, value: await openStoredStep(this.stream, stored) }
    return retry === null
      ? { found: false }
      : { found: false, retry: await openRetryState(this.stream, JSON.parse(retry) as StepRetryState) }
  }

  /** Stores a failed try of a step (fenced), with its harness.tool.step.retry record; a state with as many tries is kept. */
  async saveStepRetry(fence: Fence, name: string, state: StepRetryState, record: RecordOf<'harness.tool.step.retry'>): Promise<void> {
    const { toolCallId, epoch } = fence
    // the failure's message is sealed once, in the record, and the state keeps that same value
    const sealed = await this.stream.sealed(record)
    const reply = await this.stream.script(
      scripts.saveStepRetry,
      {
        keys: this.stream.scriptKeys,
        args: {
          toolCallId,
          epoch,
          retryField: retryField(toolCallId, name),
          state: JSON.stringify(sealed === record ? state : { ...state, m: sealed.error.message }),
          tries: state.a,
          record: encodeRecord(sealed),
        },
      },
      true,
    )
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
  }

  async getCall(toolCallId: string): Promise<CallState | null> {
    const [state, result, names] = await this.stream.command('getCall', () =>
      this.stream.redis.hmget(this.stream.keys.calls, toolCallId, `${toolCallId}\0result`, `${toolCallId}\0names`),
    )
    const call = state ? callStateOf(state, result, names) : null
    // its kept result as it was written (the calls hash keeps the log record's sealed copy)
    return call?.result ? { ...call, result: await this.stream.openedRecord(call.result) } : call
  }

  /** True when the call was requested (runTool, a fan-out's child): its request is kept, begun or not. */
  async isRequested(toolCallId: string): Promise<boolean> {
    return (
      (await this.stream.command('isRequested', () => this.stream.redis.hexists(this.stream.keys.calls, requestField(toolCallId)))) === 1
    )
  }

  /** `owner` is kept in the call state so the sweeper can enqueue the call again if its job is lost. */
  async beginCall(toolCallId: string, name: string, replay: 'safe' | 'never', owner?: CallOwner): Promise<BeginResult> {
    const begun = await this.begin(toolCallId, name, replay, owner, '')
    // an unchecked begin (no fingerprint) never answers 'unverified' (beginCall.lua)
    if (begun === 'unverified') throw new Error(`beginCall of ${toolCallId}: an unchecked begin answered 'unverified'`)
    return begun
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
    const reply = await this.stream.script(scripts.beginCall, {
      keys: this.callKeys(toolCallId),
      args: {
        toolCallId,
        name,
        replay,
        now: Date.now(),
        openMember: openMember(this.stream.sessionId, toolCallId),
        harness: owner?.harness ?? '',
        inputId: owner?.inputId ?? '',
        fingerprint,
        version: owner?.version ?? '',
        compact: this.stream.compact ? '1' : '',
      },
    })
    return reply[0] === 'unverified' ? 'unverified' : beginResultOf(reply, Boolean(owner?.inputId))
  }

  /**
   * Stores a step value with its log record (fenced). Returns the stored value: ours, or the one a
   * racing attempt stored first. `value === undefined` stores "done, no value". `encoded`: the
   * value's JSON text when the caller has it already (JSON.stringify(value)), so it is not made twice;
   * `record` as JSON text when it was made from checked parts (stepRecordJson).
   */
  async saveStep(fence: Fence, name: string, value: unknown, record: LogRecord | string, encoded?: string): Promise<StoredValue> {
    const { toolCallId, epoch } = fence
    const sealed =
      this.stream.codec || startsWithNul(value) ? await sealedStep(this.stream, fence.toolCallId, name, value, record) : undefined
    const reply = await this.stream.script(
      scripts.saveStep,
      {
        keys: this.stream.scriptKeys,
        args: {
          toolCallId,
          epoch,
          stepField: stepField(toolCallId, name),
          value: sealed?.value ?? encoded ?? encodeValue(value),
          record: sealed?.record ?? (typeof record === 'string' ? record : this.stream.encode(record)),
        },
      },
      true,
    )
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
    return reply[0] === 'exists' ? { found: true, value: await openStoredStep(this.stream, reply[1]) } : { found: true, value }
  }

  /** Logs a question once (fenced) as the step `name`; returns the stored step value. */
  async askQuestion(fence: Fence, name: string, question: Question): Promise<StoredValue> {
    const value = { questionId: question.questionId }
    const args = await askArgs(this.stream, fence, name, question, encodeValue(value))
    const reply = await this.stream.script(scripts.askQuestion, { keys: this.stream.scriptKeys, args }, true)
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
    return reply[0] === 'exists' ? { found: true, value: decodeValue(reply[1]) } : { found: true, value }
  }

  /** How many records the call has staged (a middleware hook's records are staged after the tool's). */
  async stagedCount(toolCallId: string): Promise<number> {
    return this.stream.command('stagedCount', () => this.stream.redis.llen(this.stagedKey(toolCallId)))
  }

  /** Stages records at positions `first..` of the call's appends (positions already staged are skipped). */
  async stageRecords(fence: Fence, records: LogRecord[], first = 0): Promise<void> {
    const { toolCallId, epoch } = fence
    const sealed = await Promise.all(records.map((record) => this.stream.sealed(record)))
    const staged = { keys: this.callKeys(toolCallId), args: { toolCallId, epoch, first, records: sealed.map(encodeRecord) } }
    const reply = await this.stream.script(scripts.stageRecords, staged, true)
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
  }

  /** Marks the attempt parked (sleep/ask/event): its next begin is a planned resume, not a cut (ParkOptions: how). */
  async parkCall(fence: Fence, kind: SuspendedKind, until: number, options: ParkOptions = {}): Promise<void> {
    const record = this.stream.encode({ type: 'harness.tool.suspended', toolCallId: fence.toolCallId, kind, until })
    const { toolCallId, epoch } = fence
    const { withoutJob = false, inTool = true, job } = options
    const timerMember = withoutJob ? openMember(this.stream.sessionId, toolCallId) : ''
    const flag = inTool ? ('1' as const) : ('' as const)
    const args = { toolCallId, epoch, record, timerMember, until, inTool: flag, jobId: job?.id ?? '', jobData: job?.data ?? '' }
    // without a job to slim, any key of the session's slot stands in for it (the script does not touch it)
    const keys = { ...this.stream.scriptKeys, job: job?.key ?? this.stream.keys.calls }
    const reply = await this.stream.script(scripts.parkCall, { keys, args }, true)
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
  }

  /** Lands the kept result with the staged records, atomically and fenced; `toolEnd`: what a rerun does with it (R19). */
  async landResult(fence: Fence, name: string, outcome: { result?: unknown; error?: ToolErrorPayload }, toolEnd: ToolEnd = '') {
    const { toolCallId } = fence
    const record = encodeRecord(
      await this.stream.sealed(
        outcome.error
          ? { type: 'harness.tool.result', toolCallId, name, error: outcome.error }
          : { type: 'harness.tool.result', toolCallId, name, result: outcome.result },
      ),
    )
    const args = this.landArgs(fence, record, toolEnd)
    // its only waiter is here and hears it from the reply (`landed`): no PUBLISH for the other processes to read
    const { landed, awaitedOnlyHere } = this.stream
    if (landed && awaitedOnlyHere?.(args.messageKey)) args.publish = ''
    const reply = await this.stream.script(scripts.landResult, { keys: this.callKeys(toolCallId), args }, true)
    if (reply[0] === 'fenced') throw fencedError(fence, reply[1])
    // landed (or found landed by this attempt's own retry, the same record): a waiter in this process hears it now
    this.stream.landed?.(args.messageKey, record)
    return reply[1]
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
    const record = encodeRecord(await this.stream.sealed({ type: 'harness.tool.result', toolCallId, name, error }))
    const [status] = await this.stream.script(scripts.cancelCall, {
      keys: this.callKeys(toolCallId),
      args: { ...this.landArgs(fence, record), questions: questionIds.flatMap((q) => [q, openMember(this.stream.sessionId, q)]) },
    })
    return status
  }

  /**
   * The landing of a call's result (includes/land.lua): what it writes under which epoch, whom it
   * wakes, and how its tool ended (landResult's; cancelCall's script reads no such argument).
   */
  private landArgs(fence: Fence, record: string, toolEnd: ToolEnd = ''): ScriptInput<typeof scripts.landResult>['args'] {
    const { toolCallId, epoch } = fence
    return {
      toolCallId,
      epoch,
      record,
      openMember: openMember(this.stream.sessionId, toolCallId),
      publish: this.stream.publish,
      channel: this.stream.index.events,
      messageKey: messageKey('call', this.stream.sessionId, toolCallId),
      toolEnd,
    }
  }

  stagedKey(toolCallId: string): string {
    return `${this.stream.keys.staged}:${toolCallId}`
  }

  /**
   * scriptKeys with the call's own staged list: the keys of a script of one call. The last call's are
   * kept: an attempt's steps and landing use the same (a copy of scriptKeys costs more than its script's arguments).
   */
  private callKeys(toolCallId: string) {
    const last = this.lastCallKeys
    if (last?.toolCallId === toolCallId) return last.keys
    const keys = { ...this.stream.scriptKeys, staged: this.stagedKey(toolCallId) }
    this.lastCallKeys = { toolCallId, keys }
    return keys
  }

  private lastCallKeys: { toolCallId: string; keys: ScriptKeys & { staged: string } } | undefined
}

function fencedError(fence: Fence, current: number): FencedError {
  return new FencedError(fence.toolCallId, fence.epoch, current < 0 ? null : current)
}
