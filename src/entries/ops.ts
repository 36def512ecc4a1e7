/**
 * durable-harness/ops: what operators see of a deployment and its sessions (docs/operations.md): the
 * host's stats, queues and limits, the sessions list, the turns index and its bulk replay and cancel,
 * the sweeper's repairs, the schedules list, and the session log's records as `session.log` reads them.
 */

/** Sessions, stats, queues and limits: `host.sessions`, `host.stats`, `host.queues`, `host.limits`. */
export type { SessionSummary, SessionsFilter, HostStats, QueueStats, QueueRef, LimitStats } from '../ops/index.js'
/** Incidents: turns by status and tags (`host.turns`), bulk replay and cancel, pause and resume of a harness. */
export type { TurnsFilter, TurnSummary, TurnsPage } from '../ops/index.js'
export type { HostOperations, BulkOptions } from '../harness/hostOps.js'
export type { HostUsage, UsageFilter } from '../harness/hostUsage.js'
/** `host.close(options)` and what it reports (docs/harness.md, "Shutdown"). */
export type { CloseOptions, CloseResult } from '../harness/host.js'
/** A sealed value this process cannot open (docs/encryption.md): a key it lacks, no codec, or a value that fails its check. */
export { CodecKeyMissingError, CodecDecodeError, CodecMissingError } from '../errors/index.js'
/** A budget refused a model call (`settled.error.code === 'budget_exceeded'`; docs/spend.md, "Budgets"). */
export { BudgetExceededError } from '../errors/index.js'
/** `host.tree(sessionId)`: a session's fan-out trees, child agents' sessions included. */
export type { TreeNode } from '../harness/fanoutTree.js'
export type { UsageFigures } from '../log/index.js'
export type { TurnStatus } from '../log/index.js'
/** The sweeper: `host.sweep` and what it repaired. */
export type { Repair, SweepOptions } from '../recovery/sweeper.js'
/** `host.schedules()`: the schedules of a deployment. */
export type { ScheduleInfo } from '../harness/schedules.js'
/** The string id a principal object is recorded as (its `id`, `sub`, `email` or `name`). */
export { principalId } from '../harness/tags.js'

/** The session log: `session.log` (read, follow), its entries and records, and `session.usage()`. */
export type { LogReader } from '../harness/logReader.js'
export type { SessionUsage } from '../harness/usage.js'
/** What `session.compact()` did. */
export type { Compacted, ResetDone } from '../harness/compactSession.js'
export type { ForkOptions } from '../harness/forkSession.js'
export type { LogEntry, ReadOptions, FollowOptions, Question, ModelUsage } from '../log/index.js'
export type { LogRecord, HarnessRecord, HarnessRecordType, AppRecord } from '../log/index.js'
