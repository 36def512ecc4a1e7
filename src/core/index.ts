// The leaf layer: types and pure helpers every layer may use; it imports nothing of ours.
export type { BusyMode } from './busy.js'
export type { ToolJobData, TurnJobData } from './jobs.js'
export { toolMessageContent } from './conversation.js'
export type { ToolErrorPayload } from './toolError.js'
export * from './harness.js'
export { AGENT, isAgentTool, type AgentToolMarker } from './agentMarker.js'
export { RESERVED_PREFIX } from './reserved.js'
export { WAIT_STEP_PREFIX, waitStepValueOf, type WaitStepValue } from './waitStep.js'
export type {
  CompactionInput,
  CompactionOptions,
  CompactionPlan,
  CompactionReason,
  CompactionStrategy,
  CompactionTurn,
  ResolvedCompaction,
  SummarizeRequest,
} from './compaction.js'
export { costNanos, fromNanos, pricingProblem, toNanos, type Pricing } from './pricing.js'
export { resolveBudgets, type Budget, type Budgets, type BudgetScope, type ResolvedBudget } from './budgets.js'
