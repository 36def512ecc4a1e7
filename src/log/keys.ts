import { InvalidIdError } from '../errors.js'

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
 * Every key of one session shares the hash tag `{sid}` so one Lua script may touch them all on a
 * Redis Cluster. All key names live here and nowhere else.
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
}

export function sessionKeys(prefix: string, sessionId: string): SessionKeys {
  assertSessionId(sessionId)
  const base = `${prefix}:{${sessionId}}`
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
  }
}

/** Host-wide indexes the sweeper scans (cost O(open work)). */
export function indexKeys(prefix: string) {
  return {
    sessions: `${prefix}:sessions`,
    openCalls: `${prefix}:open-batches`,
    openQuestions: `${prefix}:open-questions`,
    openTurns: `${prefix}:open-turns`,
    corrupt: `${prefix}:corrupt-sessions`,
    /** Pub/sub channel: "call|<sid>|<toolCallId>\n<result record>" when a result lands, "input|<sid>|<inputId>\n<settled record>" when a turn settles. */
    events: `${prefix}:events`,
  }
}

/**
 * Field of the steps hash. A stored tool call id never holds NUL (see callIds.ts), so the first NUL
 * separates it from the step name whatever the name holds.
 */
export function stepField(toolCallId: string, name: string): string {
  return `${toolCallId}\0${name}`
}

/** Field of the calls hash that marks a call id as used, with the fingerprint of its tool and input. */
export function requestField(toolCallId: string): string {
  return `${toolCallId}\0req`
}
