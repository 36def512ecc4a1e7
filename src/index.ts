/**
 * durable-harness: AI-agent tool calls as durable jobs on Redis Streams and BullMQ.
 */

/** Durable tools: a `@tanstack/ai` server tool whose side effects are stored steps. */
export {
  durableTool,
  withReplay,
  withTimeout,
  RetryAfterError,
  type DurableToolOptions,
  type DurableServerTool,
  type DurableExecute,
} from './tool/index.js'
/** What a durable tool's execute gets (`step`, `append`, `secrets`) and the JSON rules of step values. */
export type {
  Step,
  StepFnOptions,
  StepOptions,
  RetryPolicy,
  AskOptions,
  WaitForEventOptions,
  AppendRecord,
  DurableToolContext,
  Replay,
  Secrets,
  Json,
  JsonChecked,
  Duration,
} from './tool/index.js'

/** Harnesses: an agent's model adapter, tools, hooks and durability options. */
export { defineHarness, DEFAULT_DURABILITY, type Harness, type HarnessOptions } from './harness/defineHarness.js'
export { getLogRecords, LogRecordsCapability, type LogRecordsWriter } from './tool/index.js'
export type { DurabilityOptions, AfterToolCallInfo, AfterToolCallDecision, AfterToolCallHook, CancelOn } from './core/index.js'
/** Turn options: what a failed model call does (`turn.onModelError`), and `turn.beforeFinish`. */
export { retryTransientErrors, isTransientModelError, type RetryTransientErrorsOptions } from './turn/modelErrors.js'
export type {
  ModelError,
  ModelErrorContext,
  ModelErrorDecision,
  ModelErrorPolicy,
  FinishContext,
  FinishAdditions,
  FinishMessage,
  BeforeFinishHook,
  TurnOptions,
} from './core/index.js'
/** Flow control across every worker and shard (R17, docs/limits.md): `defineHarness({ limits })`. */
export type { Limit, HarnessLimits } from './core/index.js'
/** What `session.prompt` takes: `inputId`, `context`, `priority`. */
export type { PromptOptions } from './harness/promptOptions.js'
/** A whole harness as one tool of another. */
export { agentTool, type AgentToolOptions } from './harness/agentTool.js'

/** The host: connects harnesses to Redis, runs workers and the sweeper, opens sessions. */
export {
  createHarnessHost,
  type HarnessHost,
  type HostOptions,
  type WorkersHandle,
  type CloseOptions,
  type CloseResult,
} from './harness/host.js'
export type { Repair, SweepOptions } from './recovery/sweeper.js'
/** Machine events: `host.sendEvent` wakes the calls in `step.waitForEvent` on its (event, key). */
export type { SendEventOptions, SendEventResult } from './harness/machineEvents.js'
/** Schedules: `host.schedule` prompts a session every interval or on a cron pattern. */
export type { ScheduleOptions, ScheduleInfo } from './harness/schedules.js'
/** Where Redis is (a URL, ioredis options or a Cluster), and a client for it (for tools that need their own). */
export { createRedisClient, type RedisConnection } from './harness/connection.js'
export type { RedisClient } from './log/index.js'
/** Retention: what is kept for how long, and the export of a session's log before it is removed. */
export type { RetentionOptions } from './retention/index.js'
/** What operators see of a host: sessions, stats, queues (the `harness` CLI and the dashboard). */
export type { SessionSummary, SessionsFilter, HostStats, QueueStats, QueueRef, LimitStats } from './ops/index.js'
/** Operating incidents: turns by status and tags (`host.turns`), bulk replay and cancel, pause and resume of a harness. */
export type { TurnsFilter, TurnSummary, TurnsPage } from './ops/index.js'
export type { HostOperations, BulkOptions } from './harness/hostOps.js'
export type { TurnStatus } from './log/index.js'
/** `session.rerun` options, and the string id a principal object is recorded as (its `id`, `sub`, `email` or `name`). */
export type { RerunOptions } from './harness/rerun.js'
export { principalId } from './harness/tags.js'

/** Sessions: prompt, settle, runTool, questions and answers, abort, and a read-only view of the log. */
export type { Session, Settled, LogReader } from './harness/session.js'
export type { SessionUsage } from './harness/usage.js'
/** Live events of a session (AG-UI chunks plus harness events), resumable by cursor. */
export type { EventsOptions, SessionEvent } from './events/follow.js'
export type { LogEntry, ReadOptions, FollowOptions, Question, ModelUsage } from './log/index.js'
/** The records of the session log (validated on write and on read). */
export type { LogRecord, HarnessRecord, HarnessRecordType, AppRecord } from './log/index.js'

/** Structured logs (pino), with credentials redacted. */
export { createLogger } from './logger.js'
/** Every error the library throws on purpose: a `DurableHarnessError` with a stable `code`. */
export * from './errors/index.js'
