import type { AnyTextAdapter, ModelMessage } from '@tanstack/ai'

/**
 * Why a compaction ran: the count passed `maxTokens` (`budget`), passed `background.atTokens`
 * (`background`, prepared beside the turn), the provider refused the context (`overflow`), or
 * `session.compact()` asked (`manual`). A compaction record of `session.reset(note)` says `reset`
 * (strategy and reason); no strategy is given that one.
 */
export type CompactionReason = 'budget' | 'background' | 'overflow' | 'manual'

/** A turn the model sees, which a compaction may take out of its view. */
export interface CompactionTurn {
  inputId: string
  /** The turn's messages as the model sees them now. */
  messages: ReadonlyArray<ModelMessage>
  /** Their token count, estimated (docs/compaction.md, "Counting"). */
  tokens: number
}

/** A model call a strategy makes through the harness, for a summary. */
export interface SummarizeRequest {
  messages: ModelMessage[]
  systemPrompts?: string[]
  /** The adapter to call; default the harness's. */
  adapter?: AnyTextAdapter
}

/** What a compaction strategy is given: the turns it may cut, the count and the budget, and a model call. */
export interface CompactionInput {
  sessionId: string
  reason: CompactionReason
  /** The turns before the running one that the model sees, oldest first: what a plan may cut. */
  turns: ReadonlyArray<CompactionTurn>
  /** Tokens of the running turn, which no plan cuts (0 for `session.compact()` between turns). */
  currentTokens: number
  /** Tokens of what the model is sent besides the conversation: the system prompts and the tools. */
  overheadTokens: number
  /** What the model sees now in place of the turns compacted before (their summary, or a marker), if any. */
  summary?: string
  /** The count of what the next model call would be sent now, and the budget. */
  tokens: number
  maxTokens: number
  /**
   * One model call through the harness, resolving with its text: its token usage is kept with the
   * compaction, a failure goes to `turn.onModelError` (a retry retries the compaction), and its text
   * is redacted of session secrets before it is stored.
   */
  model(request: SummarizeRequest): Promise<string>
  signal: AbortSignal
}

/** What a strategy decides. Every field is optional; a plan that changes nothing logs nothing. */
export interface CompactionPlan {
  /** The last turn to take out of the view (an `inputId` of `turns`): it and every turn before it. */
  through?: string
  /**
   * What the model sees in place of every turn out of the view: it replaces `input.summary`. Absent,
   * the turns cut are left out with a marker that counts them, and the summary before stays.
   */
  summary?: string
  /** The tool results of the turns through this one (an `inputId` of `turns`) read as a short stub. */
  clearToolResultsThrough?: string
}

/** A compaction strategy: `evictOldest()`, `summarizeOldest()`, `clearToolResults()`, or your own. */
export interface CompactionStrategy {
  /** Names the strategy in the compaction record and the timeline. */
  readonly name: string
  /** The tokens of the newest turns it keeps as they are, when it has such a bound (defineHarness checks it is under maxTokens). */
  readonly keepRecentTokens?: number
  /** The plan for this view, or undefined to cut nothing. */
  compact(input: CompactionInput): CompactionPlan | undefined | Promise<CompactionPlan | undefined>
}

/** `defineHarness({ compaction })`: the token budget of the model's view and how it is kept (docs/compaction.md). */
export interface CompactionOptions {
  /** The budget: a model call whose view counts more is compacted first. */
  maxTokens: number
  /** The model's context window (≥ maxTokens): a view still over it after a compaction fails the turn (`context_overflow`) without a call. */
  contextWindow?: number
  /** 'estimate' (default): characters / 4; 'usage': the provider's count of the last model call, plus an estimate of what came after. */
  countTokens?: 'estimate' | 'usage'
  /** Default `summarizeOldest({ keepRecentTokens: maxTokens / 2 })` with the harness's adapter. */
  strategy?: CompactionStrategy
  /** Prepare the compaction beside the turn once the count passes `atTokens` (< maxTokens); it applies at the next model call. */
  background?: { atTokens: number }
  /**
   * Trim the log before a compaction's cut from Redis this long after the compaction (ms, or '7d'),
   * once the host's `retention.export` has the span (docs/compaction.md, "Trimming").
   */
  trimAfter?: number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`
}

/** The compaction options as defineHarness checked them. */
export interface ResolvedCompaction {
  readonly maxTokens: number
  readonly contextWindow?: number
  readonly countTokens: 'estimate' | 'usage'
  readonly strategy: CompactionStrategy
  readonly background?: { readonly atTokens: number }
  /** compaction.trimAfter in ms. */
  readonly trimAfterMs?: number
}
