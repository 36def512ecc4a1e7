import { InvalidIdError } from '../errors/index.js'
import { shardOf, shardTag } from './shards.js'

/** Session ids and input ids: safe in Redis keys, BullMQ job ids and idempotency keys. */
const ID_PATTERN = /^[A-Za-z0-9._-]{1,200}$/

export function assertSessionId(sessionId: unknown): asserts sessionId is string {
  if (typeof sessionId !== 'string' || !ID_PATTERN.test(sessionId)) throw new InvalidIdError('session id', sessionId)
}

export function assertInputId(inputId: unknown): asserts inputId is string {
  if (typeof inputId !== 'string' || !ID_PATTERN.test(inputId)) throw new InvalidIdError('input id', inputId)
}

/** A tool call id from a caller (runTool): the same rule, so it is safe in every key, field and message. */
export function assertToolCallId(toolCallId: unknown): asserts toolCallId is string {
  if (typeof toolCallId !== 'string' || !ID_PATTERN.test(toolCallId)) throw new InvalidIdError('tool call id', toolCallId)
}

export function assertQuestionId(questionId: unknown): asserts questionId is string {
  if (typeof questionId !== 'string' || !ID_PATTERN.test(questionId)) throw new InvalidIdError('question id', questionId)
}

/** True for an id that may be used as is in keys, fields, job ids and pub/sub messages. */
export function isSafeId(id: string): boolean {
  return ID_PATTERN.test(id)
}

/**
 * Every key of one session shares the hash tag of the session's shard (`{<shard tag>}`, shards.ts), as
 * do the shard's open-work indexes and queues, so one Lua script may touch them all on a Redis
 * Cluster. All key names live here and nowhere else.
 */
export interface SessionKeys {
  log: string
  steps: string
  calls: string
  staged: string
  questions: string
  inputs: string
  /** The session's open inputs in line (one turn at a time), by arrival. */
  line: string
  /** Live events (model text deltas, tools' custom events): capped and expiring, never the source of truth. */
  live: string
  /** The conversation projection: ids of the log's conversation records (commands/includes/conversation.lua). */
  conversation: string
  /**
   * The session's fan-out trees (hash, src/log/fanout.ts): `<childId>` -> `<depth>|<rootId>|` (the parent is in the child's id),
   * `<rootId>\0n` -> the tree's children in all. A parked parent's wait set is `<tree>:w:<parentId>`.
   */
  tree: string
  /** Spend totals of the session (hash, commands/includes/usage.lua): written with each model call try's record. */
  usage: string
  /** Budget counters of the session, and of the fan-out tree it roots (hash, budgets.ts): spent, held, reservations. */
  budget: string
}

/** The start of every key of shard `shard`: `<prefix>:{<shard tag>}`. */
export function shardBase(prefix: string, shard: number, shards: number): string {
  return `${prefix}:{${shardTag(shard, shards)}}`
}

export function sessionKeys(prefix: string, sessionId: string, shards: number): SessionKeys {
  assertSessionId(sessionId)
  const base = `${shardBase(prefix, shardOf(sessionId, shards), shards)}:${sessionId}`
  return {
    log: `${base}:log`,
    steps: `${base}:steps`,
    calls: `${base}:calls`,
    staged: `${base}:staged`,
    questions: `${base}:q`,
    inputs: `${base}:inputs`,
    line: `${base}:line`,
    live: `${base}:live`,
    conversation: `${base}:conv`,
    tree: `${base}:tree`,
    usage: `${base}:usage`,
    budget: `${base}:budget`,
  }
}

/** The indexes of one shard that the sweeper scans (cost O(open work)), and its wake-up channel. */
export function indexKeys(prefix: string, shard: number, shards: number) {
  const base = shardBase(prefix, shard, shards)
  return {
    sessions: `${base}:sessions`,
    openCalls: `${base}:open-batches`,
    openQuestions: `${base}:open-questions`,
    openTurns: `${base}:open-turns`,
    /**
     * The wake-up times of the calls parked in step.waitForEvent without a BullMQ job (a runTool call's
     * wait): member `<sid>|<toolCallId>`, score = the wait's timeout (ms). The workers of the shard
     * enqueue a call's job when it is due (hostWorkers.ts), a sender when its event arrives.
     */
    eventTimers: `${base}:event-timers`,
    /**
     * The sessions whose log has a span to trim (compaction.trimAfter, sessionTrim.ts): member the
     * session id, score = when its oldest compaction not trimmed yet is due (ms).
     */
    trims: `${base}:trims`,
    corrupt: `${base}:corrupt-sessions`,
    /** String, PX: the worker process that looks at the shard's active jobs for gone processes this moment (lookAtShard.lua). */
    lookClaim: `${base}:liveness-look`,
    /** Hash: sweeper repairs by reason, counted for operators (`harness stats`, metrics). */
    recoveries: `${base}:recoveries`,
    /**
     * (Sharded) pub/sub channel: "call|<sid>|<toolCallId>\n<result record>" when a result lands,
     * "input|<sid>|<inputId>\n<settled record>" when a turn settles.
     */
    events: `${base}:events`,
  }
}
export type IndexKeys = ReturnType<typeof indexKeys>

/** A turn's status in the turns indexes (host.turns): open (running, in line or paused) or how it settled. */
export type TurnStatus = 'open' | 'completed' | 'failed' | 'aborted'
export const TURN_STATUSES: readonly TurnStatus[] = ['open', 'completed', 'failed', 'aborted']

/**
 * The turns index of one harness in one shard for one status (sorted set): member `<sid>|<inputId>`,
 * score = ms the turn entered the status. Written by the scripts that change a turn's status (addInput,
 * settleInput, rerunTurn), cleaned by removeSession; host.turns pages it, O(the page).
 */
export function turnIndexKey(prefix: string, shard: number, shards: number, harness: string, status: TurnStatus): string {
  return `${shardBase(prefix, shard, shards)}:turns:${harness}:${status}`
}

/**
 * A name (a model's tool name, a tag's value: hostile) in a key: every character but [A-Za-z0-9._-] as
 * `%` and 4 hex digits, so no name spells another's key; never throws (encodeURIComponent does on a
 * lone surrogate).
 */
const keyPart = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(4, '0')}`)

/**
 * The spend of one harness in one shard on one UTC day (hash, commands/includes/usage.lua; host.usage):
 * field '<metric>/<model length>/<model><principal>'. Written with each model call try's record; kept.
 */
export function usageDayKey(prefix: string, shard: number, shards: number, harness: string, day: string): string {
  return `${shardBase(prefix, shard, shards)}:usage-day:${keyPart(harness)}:${day}`
}

/**
 * The budget counters of one principal of one harness in one period (hash, budgets.ts), in the shard of
 * the principal's name; it expires two periods after its period starts.
 */
export function principalBudgetKey(prefix: string, shards: number, harness: string, principal: string, periodStart: number): string {
  return `${shardBase(prefix, shardOf(principal, shards), shards)}:budget:${keyPart(harness)}:${periodStart}:${keyPart(principal)}`
}

/** The UTC day of a time, as the day hashes name it: YYYY-MM-DD. */
export const usageDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/**
 * The tool index of one harness in one shard (sorted set; host.turns({ tool })): member `<sid>|<inputId>`
 * of every turn a model response of which called the tool, score = ms the turn was prompted. Written by
 * logModelResponse, cleaned by removeSession.
 */
export function turnToolIndexKey(prefix: string, shard: number, shards: number, harness: string, tool: string): string {
  return `${shardBase(prefix, shard, shards)}:turn-tool:${keyPart(harness)}:${keyPart(tool)}`
}

/**
 * The tag index of one harness in one shard for one `key=value` (sorted set; host.turns({ metadata })):
 * member `<sid>|<inputId>` of every turn prompted with the tag, score = ms it was prompted. Written by
 * addInput, cleaned by removeSession.
 */
export function turnTagIndexKey(prefix: string, shard: number, shards: number, harness: string, key: string, value: string): string {
  return `${shardBase(prefix, shard, shards)}:turn-tag:${keyPart(harness)}:${keyPart(key)}=${keyPart(value)}`
}

/**
 * The indexes of one shard that removeSession.lua's 'check' named: a harness's turns indexes (every
 * status), and its tool (`\0tool\0<harness>\0<tool>`) and tag (`\0tag\0<harness>\0<key>\0<value>`) indexes.
 */
export function namedIndexKeys(prefix: string, shard: number, shards: number, names: readonly string[]): string[] {
  return names.flatMap((name) => {
    if (!name.startsWith('\0')) return TURN_STATUSES.map((status) => turnIndexKey(prefix, shard, shards, name, status))
    const [kind, harness = '', key = '', ...rest] = name.slice(1).split('\0')
    if (kind === 'tool') return [turnToolIndexKey(prefix, shard, shards, harness, [key, ...rest].join('\0'))]
    return [turnTagIndexKey(prefix, shard, shards, harness, key, rest.join('\0'))]
  })
}

/** The deployment's shard count, written by the first host; a host with another count is refused. */
export function shardCountKey(prefix: string): string {
  return `${prefix}:shards`
}

/**
 * The deployment's record format (storedRecords.ts): '2' when its hosts write the five records of a
 * call's way to its park positionally; absent or '1' when they write every record as an object.
 */
export function recordFormatKey(prefix: string): string {
  return `${prefix}:record-format`
}

/** The deployment's key of call marks (callMarks.ts): random, written once, never sent to a queue. */
export function callMarkKey(prefix: string): string {
  return `${prefix}:call-mark-key`
}

/**
 * Field of the steps hash. A stored tool call id never holds NUL (see callIds.ts), so the first NUL
 * separates it from the step name whatever the name holds.
 */
export function stepField(toolCallId: string, name: string): string {
  return `${toolCallId}\0${name}`
}

/**
 * Field of the steps hash with a step's retry state (its failed tries and next time, R16). It starts
 * with NUL, which no step field does (a tool call id is never empty and never holds NUL).
 */
export function retryField(toolCallId: string, name: string): string {
  return `\0retry\0${toolCallId}\0${name}`
}

/** Field of the calls hash that marks a call id as used, with the fingerprint of its tool and input. */
export function requestField(toolCallId: string): string {
  return `${toolCallId}\0req`
}
