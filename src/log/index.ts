export { SessionLog, encodeRecord, type LogEntry, type ReadOptions, type FollowOptions, type BeginResult, type CallState, type Fence, type StepLookup, type Question, type InputState, type CallOwner, type ParentCall } from './sessionLog.js'
export { sessionKeys, indexKeys, assertSessionId, assertInputId, stepField, type SessionKeys } from './keys.js'
export { harnessRecordSchemas, parseRecord, RESERVED_PREFIX, type HarnessRecord, type HarnessRecordType, type AppRecord, type LogRecord, type RecordOf, type ToolErrorPayload, type ToolCallRecord } from './records.js'
