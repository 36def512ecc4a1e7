/**
 * durable-harness: AI-agent tool calls as durable jobs on Redis Streams and BullMQ.
 *
 * The root entry holds what a tool author and a host owner use. Operators' views (stats, queues, the
 * turns index, bulk operations, the session log's records) are in `durable-harness/ops`; the
 * harness's hooks and turn policies with their argument types in `durable-harness/hooks`.
 * test/unit/api.test.ts lists every name of every entry.
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
  Duration,
} from './tool/index.js'
/** A middleware tool hook's writer of records that land with the call's result (its type: `durable-harness/hooks`). */
export { getLogRecords } from './tool/index.js'

/** Harnesses: an agent's model adapter, tools, hooks and durability options. */
export { defineHarness, type Harness, type HarnessOptions } from './harness/defineHarness.js'
export type { DurabilityOptions, TurnOptions, CancelOn, Limit, HarnessLimits } from './core/index.js'
/** The common `turn.onModelError` policy; its options, the others and the hooks' types are in `durable-harness/hooks`. */
export { retryTransientErrors, isTransientModelError } from './turn/modelErrors.js'
/** Compaction of a long session's model view (docs/compaction.md): the strategies, and the test for a context overflow. */
export { evictOldest, summarizeOldest, clearToolResults, isContextOverflowError } from './compaction/index.js'
/** A whole harness as one tool of another. */
export { agentTool, type AgentToolOptions } from './harness/agentTool.js'

/** The host: connects harnesses to Redis, runs workers and the sweeper, opens sessions. */
export { createHarnessHost, type HarnessHost, type HostOptions, type WorkersHandle } from './harness/host.js'
/** Data at rest (docs/encryption.md): `createHarnessHost({ codec: aesGcmCodec({ keys, current }) })`, or a codec of your own. */
export { aesGcmCodec, type PayloadCodec } from './codec/index.js'
/** Machine events: `host.sendEvent` wakes the calls in `step.waitForEvent` on its (event, key). */
export type { SendEventOptions, SendEventResult } from './harness/machineEvents.js'
/** Schedules: `host.schedule` prompts a session every interval or on a cron pattern. */
export type { ScheduleOptions } from './harness/schedules.js'
/** Where Redis is (a URL, ioredis options or a Cluster), and a client for it (for tools that need their own). */
export { createRedisClient, type RedisConnection } from './harness/connection.js'
export type { RedisClient } from './log/index.js'
/** Retention: what is kept for how long, and the export of a session's log before it is removed. */
export type { RetentionOptions } from './retention/index.js'

/** Sessions: prompt, settle, runTool, questions and answers, abort, and live events. */
export type { Session, Settled } from './harness/session.js'
export type { PromptOptions } from './harness/promptOptions.js'
export type { RerunOptions } from './harness/rerun.js'
export type { EventsOptions, SessionEvent } from './events/follow.js'

/** Structured logs (pino), with credentials redacted. */
export { createLogger } from './logger.js'

/**
 * Errors: every error the library throws on purpose is a `DurableHarnessError` with a stable `code`
 * (docs/errors.md lists them all); branch on `code`. The classes here are the ones a caller catches
 * by class or a tool throws.
 */
export { DurableHarnessError, isDurableHarnessError, type DurableHarnessErrorCode } from './errors/index.js'
export { SessionBusyError, InvalidAnswerError, QuestionClosedError, ToolCallError, WaitTimeoutError } from './errors/index.js'
export {
  NonRetryableError,
  StepRetriesExhaustedError,
  QuestionExpiredError,
  EventTimeoutError,
  InvalidEventPayloadError,
} from './errors/index.js'
