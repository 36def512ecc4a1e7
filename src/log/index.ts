export { SessionLog } from './sessionLog.js'
export { writeFork } from './forks.js'
export { planTrim, applyTrim, rescheduleTrim, type TrimPlan } from './sessionTrim.js'
export type { CallLedger } from './callLedger.js'
export type { StepRetryState } from './callState.js'
export type { BeginResult, CallState, Fence, ParkedJob, ParkOptions } from './callState.js'
export type { ToolEnd } from './commands/index.js'
export { startCall, type JobStart, type StartReply } from './callStart.js'
export { eventTimerOf, clearEventTimer } from './eventTimers.js'
export { callFingerprint } from './callIds.js'
export type { Question, ModelToolCall } from './inputs.js'
export { contextOf, type InputState, type InputTags, type ParentCall, type TreeRef } from './inputState.js'
export type { StepLookup } from './stepValues.js'
export { encodeRecord, isRecord, type LogEntry, type ReadOptions, type FollowOptions } from './stream.js'
export { followLog } from './followLog.js'
export { isStreamId, streamIdMs } from './streamIds.js'
export {
  indexKeys,
  shardBase,
  assertSessionId,
  assertInputId,
  assertToolCallId,
  stepField,
  turnIndexKey,
  turnTagIndexKey,
  turnToolIndexKey,
  TURN_STATUSES,
  type TurnStatus,
  isSafeId,
} from './keys.js'
export { assertShards, defaultShards, shardOf } from './shards.js'
export { claimShardCount } from './deployment.js'
export { claimRecordFormat, encodeStored, parseCompactRecord, type RecordFormat } from './storedRecords.js'
export { CallMarks, claimCallMarks, MARK_TRUST_MS } from './callMarks.js'
export { duplicateClient, isCluster, type RedisClient } from './client.js'
export { compareIds, waitForEntries } from './sharedReader.js'
export { stepRecordJson } from './stepRecord.js'
export { openJobInput, openOrMask, sealJobInput } from './sealedRecords.js'
export { sealedKeyIds } from './sealedKeys.js'
export { openMember, messageKey, parseMessage, turnJobId, toolJobId, sessionOfJobId, parseToolJobId, type Message } from './formats.js'
export { OpenWork, type OpenItem } from './openWork.js'
export { ScheduleTicks, type TickCounts } from './scheduleTicks.js'
export { EventWaits, callWaitMember, DEFAULT_EVENT_RETENTION_MS, type EventAddress, type EventWaiter, type Delivery } from './eventWaits.js'
export { assertEventAddressPart, eventAddressId, MAX_EVENT_ADDRESS_LENGTH } from './eventAddress.js'
export { openWaitsOf, waitAddressId, waitStepValueOf, WAIT_STEP_PREFIX, type OpenWait, type WaitStepValue } from './openWaits.js'
export {
  harnessRecordSchemas,
  parseRecord,
  hasType,
  isHarnessRecord,
  asHarnessRecord,
  RESERVED_PREFIX,
  CONVERSATION_TYPES,
  conversationOf,
  type HarnessRecord,
  type HarnessRecordType,
  type AppRecord,
  type LogRecord,
  type RecordOf,
  type ToolErrorPayload,
  type ToolOutcome,
  type ToolCallRecord,
  type ModelUsage,
} from './records.js'
export { storedOpenCalls, moveWakeTime, type StoredCall } from './storedCalls.js'
export { LimitStore, type LimitBounds, type LimitKeyState, type SlotReply } from './limitStore.js'
export { dropStaleMarker, type QueueMarkerKeys } from './queueMarker.js'
export {
  fenceAttempt,
  namedConnections,
  ownConnectionNames,
  reclaimJob,
  type HeldJob,
  type JobReclaim,
  type LivenessLook,
  type NamedConnection,
} from './workerLiveness.js'
export { parentOfChild, type ChildPlace, type FanoutLedger, type TreeLimits } from './fanout.js'
export { readSessionUsage, rollUpUsage } from './sessionUsage.js'
export { FIGURE_OF, zeroFigures, usageCounts, type UsageFigures } from './usageTotals.js'
export {
  markModelTry,
  principalBudget,
  readBudget,
  reserveBudget,
  sessionBudgetKey,
  settleBudget,
  turnBudgets,
  budgetsLeft,
  type BudgetLeft,
  type TurnBudget,
  type BudgetAmount,
  type BudgetFigures,
  type BudgetHold,
  type BudgetRefusal,
  type TryMark,
} from './budgets.js'
export { usageDay, usageDayKey } from './keys.js'
