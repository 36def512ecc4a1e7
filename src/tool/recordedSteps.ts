import type { LockLostError } from '../errors/index.js'
import type { LogRecord, Question, RecordOf, StepLookup, StepRetryState } from '../log/index.js'

/**
 * What the step core (stepCore.ts) reads and writes of one call's recorded steps, and nothing else:
 * the session log's call ledger in a worker (durableContext.ts), a map in the unit tests. Every write
 * is the attempt's own: the ledger fences it on the attempt's epoch. A method returns its store's
 * promise as is (no wrapper: this is the path of every `step.do`).
 */
export interface RecordedSteps {
  /** The session log's id: the first part of every idempotency key (R5). */
  readonly logId: string
  readonly toolCallId: string
  /** True on a fresh first attempt: nothing can be recorded yet, so the core reads nothing (one round trip less a step). */
  readonly fresh: boolean
  /** A step's recorded value, if it has one. */
  recorded(name: string): Promise<StepLookup>
  /** A step's recorded value, else its recorded retry state (R16), in one read. */
  recordedWithRetry(name: string): Promise<StepLookup & { retry?: StepRetryState }>
  /**
   * Records a `step.do` value (a checked JSON copy, `encoded` its JSON text) with its
   * `harness.tool.step` record. Resolves with the recorded value: this one, or one recorded first.
   */
  recordStep(name: string, copy: unknown, encoded: string | undefined): Promise<{ value: unknown }>
  /** Records a step value (a wait's: sleep, a wait's timeout, an event's payload) with its own log record. */
  record(name: string, value: unknown, record: LogRecord, encoded?: string): Promise<{ value: unknown }>
  /** Records a failed try of a step with its `harness.tool.step.retry` record. */
  recordRetry(name: string, state: StepRetryState, record: RecordOf<'harness.tool.step.retry'>): Promise<void>
  /** Records a question as the step `name`, once (its `harness.tool.ask` record, the open question). */
  recordQuestion(name: string, question: Question): Promise<unknown>
  /** A question and its answer, if asked. */
  question(questionId: string): Promise<{ question: Question; answer: StepLookup } | null>
  /** Stages `append` records at positions `first..` of the call's appends (a position staged already is kept). */
  stage(records: LogRecord[], first: number): Promise<void>
}

/**
 * What an attempt knows of its hold on its call (its job's lock): user code with side effects starts
 * only after `confirm`, so an attempt whose lock was taken over runs none (docs/decisions/zombie-attempt-lock.md).
 */
export interface AttemptHold {
  /**
   * Returns (undefined, at once) while the attempt surely holds its call, else a promise that resolves
   * once it confirmed it; throws (or rejects with) LockLostError when it lost it (or StorageError).
   */
  confirm(): Promise<void> | undefined
  /** Set once the attempt is known to have lost its call: from then on it runs and writes nothing. */
  readonly lost: LockLostError | null
}

/**
 * An attempt's abort as its steps read it: `aborted` and `reason` without the signal, which is made
 * only when something waits on it (a retry's back-off; call/callAborts.ts).
 */
export interface AttemptSignal {
  readonly aborted: boolean
  readonly reason: unknown
  readonly signal: AbortSignal
}
