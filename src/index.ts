/**
 * durable-harness: AI-agent tool calls as durable jobs on Redis Streams and BullMQ.
 */
export { durableTool, withReplay, withTimeout, type DurableToolOptions, type DurableServerTool, type DurableExecute } from './tool/index.js'
export type { Step, StepFnOptions, AskOptions, AppendRecord, DurableToolContext, Replay, Secrets, Json, JsonChecked, Duration } from './tool/index.js'
export { defineHarness, DEFAULT_DURABILITY, type Harness, type HarnessOptions } from './harness/defineHarness.js'
export { createHarnessHost, type HarnessHost, type HostOptions, type WorkersHandle, type CloseOptions, type CloseResult } from './harness/host.js'
export { Session, type Settled } from './harness/session.js'
export { agentTool, type AgentToolOptions } from './harness/agentTool.js'
export type { DurabilityOptions, AfterToolCallInfo, AfterToolCallDecision, AfterToolCallHook } from './harnessTypes.js'
export { SessionLog, harnessRecordSchemas, type LogEntry, type LogRecord, type HarnessRecord, type HarnessRecordType, type AppRecord, type Question } from './log/index.js'
export type { Repair, SweepOptions } from './recovery/index.js'
export { createLogger } from './logger.js'
export * from './errors.js'
