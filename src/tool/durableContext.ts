import type { CallLedger, SessionLog, Fence, LogRecord, Question, RecordOf, StepRetryState } from '../log/index.js'
import { stepRecordJson } from '../log/index.js'
import type { AttemptHold, AttemptSignal, RecordedSteps } from './recordedSteps.js'
import type { RetryPolicy } from './retry.js'
import type { SecretStore } from './secrets.js'
import { createStepCore, type DurableContextHandle, type EventWaitsOf, type WaitRecording } from './stepCore.js'
import { createWaitForEvent } from './waitForEvent.js'

export interface DurableContextOptions {
  log: SessionLog
  fence: Fence
  secrets: SecretStore
  maxValueBytes: number
  /** True on a fresh first attempt: no step can be stored yet, so lookups are skipped (one round trip less a step). */
  fresh: boolean
  /** The attempt's abort: once it fired (timeout, turn ended) no step starts. */
  abort?: AttemptSignal | undefined
  /** The tool's default retry policy of every step.do (durableTool's `retry`). */
  retry?: RetryPolicy | undefined
  /** The attempt's hold on its call: confirmed before each try of a step's fn. */
  hold?: AttemptHold | undefined
  /** The harness version the call began under: its questions record it. */
  version?: string | undefined
  /** The harness's name: a sender of an event this call waits for finds its queue by it (runCall passes it). */
  harness?: string | undefined
}

/**
 * A call's recorded steps in its session log, for one attempt: each read and write goes to the log's
 * call ledger, the writes fenced on the attempt's epoch (a superseded attempt's write is refused:
 * FencedError). Its questions and event waits are the log's too (waitForEvent.ts).
 */
class LedgerSteps implements RecordedSteps, EventWaitsOf {
  readonly logId: string
  readonly toolCallId: string
  readonly fresh: boolean
  private readonly log: SessionLog
  private readonly calls: CallLedger
  private readonly fence: Fence
  private readonly harness: string

  constructor(options: DurableContextOptions) {
    this.log = options.log
    this.calls = options.log.calls
    this.fence = options.fence
    this.fresh = options.fresh
    this.harness = options.harness ?? ''
    this.logId = options.log.stream.logId
    this.toolCallId = options.fence.toolCallId
  }

  recorded(name: string) {
    return this.calls.getStep(this.toolCallId, name)
  }

  recordedWithRetry(name: string) {
    return this.calls.getStepAndRetry(this.toolCallId, name)
  }

  recordStep(name: string, copy: unknown, encoded: string | undefined) {
    // the record from its checked parts: the value is not walked nor encoded again (hot-path-allocation.md)
    return this.calls.saveStep(this.fence, name, copy, stepRecordJson(this.toolCallId, name, encoded, this.calls.stream.compact), encoded)
  }

  record(name: string, value: unknown, record: LogRecord, encoded?: string) {
    return this.calls.saveStep(this.fence, name, value, record, encoded)
  }

  recordRetry(name: string, state: StepRetryState, record: RecordOf<'harness.tool.step.retry'>) {
    return this.calls.saveStepRetry(this.fence, name, state, record)
  }

  recordQuestion(name: string, question: Question) {
    return this.calls.askQuestion(this.fence, name, question)
  }

  question(questionId: string) {
    return this.log.inputs.getQuestion(questionId)
  }

  stage(records: LogRecord[], first: number) {
    return this.calls.stageRecords(this.fence, records, first)
  }

  waitsFor(recording: WaitRecording) {
    return createWaitForEvent({ ...recording, log: this.log, fence: this.fence, harness: this.harness, fresh: this.fresh })
  }
}

/**
 * The step context of a tool call attempt in a durable session, bound to (session log, toolCallId,
 * fencing epoch): the step core (stepCore.ts) over the call's steps in the log, and the event waits
 * of its `waitForEvent`. Every write is fenced; a step's value is stored before step.do resolves (R1).
 */
export function createDurableContext(options: DurableContextOptions): DurableContextHandle {
  const steps = new LedgerSteps(options)
  return createStepCore(steps, options, steps)
}
