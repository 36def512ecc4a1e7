import { z } from 'zod'

const tokenCount = z.number().int().nonnegative()

/**
 * A model call's usage, with the names of `@tanstack/ai`'s TokenUsage (RUN_FINISHED `usage`; the
 * cache and reasoning counts flattened from its details) and the model and cost it was billed at
 * (docs/spend.md). Records before issue 55 hold only the three counts: every other field is optional.
 */
export const usageSchema = z.object({
  promptTokens: tokenCount,
  completionTokens: tokenCount,
  totalTokens: tokenCount,
  /** Input tokens read from the provider's cache (part of promptTokens). */
  cachedTokens: tokenCount.optional(),
  /** Input tokens written to the provider's cache. */
  cacheWriteTokens: tokenCount.optional(),
  /** Reasoning tokens (part of completionTokens). */
  reasoningTokens: tokenCount.optional(),
  /** The model the call was sent to (the adapter's `model`). */
  model: z.string().optional(),
  /** USD: the provider's own figure, else from the harness's `pricing`; absent when neither knows. */
  cost: z.number().nonnegative().optional(),
  costFrom: z.enum(['provider', 'pricing']).optional(),
  /** The provider reported nothing (a failed or cut try): the counts are the harness's estimate. */
  estimated: z.literal(true).optional(),
})
/** Usage of one model call try, in `@tanstack/ai`'s TokenUsage names (docs/spend.md). */
export type ModelUsage = z.infer<typeof usageSchema>

/**
 * A model call try counted without a model response of it in the log (docs/spend.md): 'failed' the
 * provider failed it (the turn's policy decided the rest), 'cut' its run ended before its end was
 * written (a crash; counted by the next try of the turn), 'dropped' its response was not logged (another
 * run of the turn logged first), 'refused' the provider answered it with an HTTP error status before any
 * output (not billed: zero usage, and no call in the totals).
 */
export const usageRecordSchema = z.object({
  inputId: z.string(),
  reason: z.enum(['failed', 'cut', 'dropped', 'refused']),
  usage: usageSchema,
  at: z.number(),
})

/**
 * A budget refused a model call of a turn (docs/spend.md, "Budgets"): which scope and ceiling, the
 * scope's spent and held figures then and the call's estimate (cost in USD), and what the turn did.
 */
export const budgetExceededSchema = z.object({
  inputId: z.string(),
  scope: z.enum(['session', 'tree', 'principal']),
  metric: z.enum(['cost', 'tokens', 'calls']),
  max: z.number(),
  spent: z.number(),
  held: z.number(),
  estimate: z.number(),
  action: z.enum(['pause', 'fail']),
  principal: z.string().optional(),
  at: z.number(),
})
