export {
  durableTool,
  withReplay,
  withTimeout,
  timeoutOf,
  MAX_TIMER_MS,
  replayOf,
  isDurableTool,
  DURABLE,
  type DurableExecute,
  type DurableToolOptions,
  type DurableServerTool,
} from './durableTool.js'
export type {
  Step,
  StepFnOptions,
  StepOptions,
  AskOptions,
  WaitForEventOptions,
  AppendRecord,
  DurableToolContext,
  Replay,
} from './context.js'
export type { RetryPolicy } from './retry.js'
export { RetryAfterError } from './retryAfter.js'
export { createDurableContext } from './durableContext.js'
export { APPROVAL_STEP, type DurableContextHandle } from './stepCore.js'
export type { AttemptHold, AttemptSignal } from './recordedSteps.js'
export { Park } from './park.js'
export { NO_SECRETS, SecretStore, type Secrets } from './secrets.js'
export { toJsonCopy, encodeChecked, DEFAULT_MAX_VALUE_BYTES, type Json } from './json.js'
export type { Duration } from './duration.js'
export { MAX_SLEEP_MS, parseDuration } from './duration.js'
export { questionIdOf, validateNow } from './ask.js'
export { toToolError } from './toolError.js'
export { middlewareRun } from './middlewareContext.js'
export { customEvents, resolveSecrets, resolverErrorName } from './customEvents.js'
export { getLogRecords, hookRecords, provideLogRecords, type LogRecordsWriter } from './logRecords.js'
export {
  NO_CHILD_AGENTS,
  NO_CHILD_TOOLS,
  type ChildAgentGroup,
  type ChildAgentHandle,
  type ChildAgentHarness,
  type ChildAgentOptions,
  type ChildAgents,
  type ChildAgentSettled,
  type ChildGroup,
  type ChildGroupOptions,
  type ChildHandle,
  type ChildOptions,
  type ChildSettled,
  type ChildToolRef,
  type ChildTools,
} from './children.js'
export { observeStepRuns } from './stepRuns.js'
