/**
 * durable-harness/hooks: the harness's hooks and turn policies (docs/harness.md) and the types of
 * their arguments and results, for a hook written apart from its `defineHarness` call:
 * `afterToolCall`, `turn.onModelError`, `turn.beforeFinish`, and `compaction` (its options and a strategy of your own).
 */

/** `defineHarness({ afterToolCall })`: sees each tool call's outcome, may replace its result. */
export type { AfterToolCallHook, AfterToolCallInfo, AfterToolCallDecision } from '../core/index.js'
/** `turn.onModelError`: what a failed model call does (retry, pause, fail); `retryTransientErrors` is one. */
export type { ModelErrorPolicy, ModelErrorContext, ModelError, ModelErrorDecision } from '../core/index.js'
/** The options of `retryTransientErrors` (from `durable-harness`). */
export type { RetryTransientErrorsOptions } from '../turn/modelErrors.js'
/** What `getLogRecords(ctx)` (from `durable-harness`) returns in a middleware tool hook. */
export type { LogRecordsWriter } from '../tool/index.js'
/** `turn.beforeFinish`: messages added before a turn ends. */
export type { BeforeFinishHook, FinishContext, FinishAdditions, FinishMessage } from '../core/index.js'
/** `defineHarness({ compaction })`: the view's token budget, and a strategy of your own (docs/compaction.md). */
export type {
  CompactionOptions,
  CompactionStrategy,
  CompactionInput,
  CompactionPlan,
  CompactionTurn,
  CompactionReason,
  SummarizeRequest,
} from '../core/index.js'
/** The options of `summarizeOldest`, `evictOldest` and `clearToolResults`, and a summarizer of your own. */
export type { SummarizeOldestOptions, KeepRecentOptions, SummarizeFn, SummarizeInput } from '../compaction/index.js'
/** `defineHarness({ budgets })`: spend ceilings per session, tree and principal, and what `ctx.budget()` reads (docs/spend.md). */
export type { Budget, Budgets } from '../core/index.js'
export type { BudgetLeft } from '../log/index.js'
/** A codec of your own (`createHarnessHost({ codec })`, docs/encryption.md): where a value is stored, what it is stored as, and aesGcmCodec's options. */
export type { CodecPlace, Envelope, AesGcmCodecOptions } from '../codec/index.js'
