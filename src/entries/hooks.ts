/**
 * durable-harness/hooks: the harness's hooks and turn policies (docs/harness.md) and the types of
 * their arguments and results, for a hook written apart from its `defineHarness` call:
 * `afterToolCall`, `turn.onModelError`, `turn.beforeFinish`.
 */

/** `defineHarness({ afterToolCall })`: sees each tool call's outcome, may replace its result. */
export type { AfterToolCallHook, AfterToolCallInfo, AfterToolCallDecision } from '../core/index.js'
/** `turn.onModelError`: what a failed model call does (retry, pause, fail); `retryTransientErrors` is one. */
export type { ModelErrorPolicy, ModelErrorContext, ModelError, ModelErrorDecision } from '../core/index.js'
/** `turn.beforeFinish`: messages added before a turn ends. */
export type { BeforeFinishHook, FinishContext, FinishAdditions, FinishMessage } from '../core/index.js'
