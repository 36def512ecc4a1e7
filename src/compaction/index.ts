// Compaction of a model's view (docs/compaction.md): the strategies, the count, the options and the
// record's meaning. The turn layer (src/turn/compact.ts) runs them; nothing here speaks to Redis.
export { evictOldest, summarizeOldest, clearToolResults, lastTurnToCut } from './strategies.js'
export type { SummarizeFn, SummarizeInput, SummarizeOldestOptions, KeepRecentOptions } from './strategies.js'
export { estimateTokens, estimateTextTokens } from './tokens.js'
export { isContextOverflowError, overflowSizes } from './overflow.js'
export { resolveCompaction } from './options.js'
export { CLEARED_RESULT, RESET, compactionSummary, compactionText, nextCompaction } from './record.js'
