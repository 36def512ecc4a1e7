import { RESERVED_PREFIX, type ToolErrorPayload } from '../core/index.js'
import { z } from 'zod'
import { isJsonData } from './jsonData.js'
import { forkRecord } from './forkRecord.js'
import { budgetExceededSchema, usageRecordSchema, usageSchema } from './usageRecord.js'

/**
 * The record types of the session log. Every record is validated by these schemas on write and on
 * read; types flow from here to the rest of the library.
 */
// Checked as JSON at run time (on write and read); typed `unknown` so values flow in without casts:
// they are JSON copies by the time they reach a record (tool/json.ts), and readers treat them as data.
const json = z.custom<unknown>(isJsonData, { message: 'not JSON data' })
/** A machine event's wait scoped to its session (docs/machine-events.md); absent: unscoped. */
const scope = z.literal('session').optional()

// the shape core/ declares for every layer; the schema is checked against it
const toolError: z.ZodType<ToolErrorPayload> = z.object({ message: z.string(), code: z.string().optional() })
export type { ToolErrorPayload }

const toolCallSchema = z.object({
  /** The id the call is stored under (safe, unique in the session: see callIds.ts). */
  toolCallId: z.string().min(1),
  name: z.string(),
  input: json,
  /** The id the model gave the call, when it differs from toolCallId; the model is shown this one. */
  modelToolCallId: z.string().optional(),
  /** The model's input was this many bytes, over maxValueBytes: it is not kept, and the call gets a tool error. */
  inputTooLarge: z.number().int().optional(),
})
export type ToolCallRecord = z.infer<typeof toolCallSchema>

const tokenCount = z.number().int().nonnegative()
export type { ModelUsage } from './usageRecord.js'

/** A turn, by its input: the id and the stream id of its `harness.input` entry. */
const turnRef = z.object({ inputId: z.string(), entryId: z.string() })

export const harnessRecordSchemas = {
  /** `context`: the caller's JSON context of the input (`prompt(text, { context })`), every tool call of the turn gets it. */
  'harness.input': z.object({
    inputId: z.string(),
    text: z.string(),
    at: z.number(),
    context: json.optional(),
    /** Operator tags (`prompt(text, { metadata })`): `host.turns({ metadata })` finds the turn by them. */
    metadata: z.record(z.string(), z.string()).optional(),
    /** Who prompted (`prompt(text, { principal })`, the handler's authorize result as a string id). */
    principal: z.string().optional(),
  }),
  'harness.model.response': z.object({
    inputId: z.string(),
    text: z.string().optional(),
    toolCalls: z.array(toolCallSchema),
    /** The live message its text was streamed under (live.ts), when it was streamed. */
    messageId: z.string().optional(),
    /** The token usage the adapter reported for this model call (RUN_FINISHED), when it reported any. */
    usage: usageSchema.optional(),
    /** busy 'steer': the joined inputs this model call was the first to be shown, in order; absent on older records. */
    joined: z.array(z.string()).optional(),
  }),
  'harness.tool.requested': z.object({ toolCallId: z.string(), name: z.string(), input: json }),
  'harness.tool.started': z.object({
    toolCallId: z.string(),
    name: z.string(),
    attempt: z.number().int().positive(),
    replay: z.enum(['safe', 'never']),
    reason: z.enum(['fresh', 'resume', 'rerun', 'cut']),
    /** The harness version the call began under (docs/deploys.md); absent on older records. */
    version: z.string().optional(),
  }),
  'harness.tool.step': z.object({ toolCallId: z.string(), name: z.string(), value: json.optional() }),
  /** A failed try of a step with a retry policy (R16); no `nextAt`: no further try (exhausted, or not retryable). */
  'harness.tool.step.retry': z.object({
    toolCallId: z.string(),
    name: z.string(),
    attempt: z.number().int().positive(),
    error: z.object({ message: z.string(), name: z.string().optional() }),
    nextAt: z.number().optional(),
    /** Set when there is no further try: every try failed, or the error was not retryable. */
    final: z.enum(['exhausted', 'stopped']).optional(),
  }),
  'harness.tool.sleep': z.object({ toolCallId: z.string(), name: z.string(), wakeAt: z.number() }),
  'harness.tool.ask': z.object({
    toolCallId: z.string(),
    questionId: z.string(),
    name: z.string(),
    message: z.string(),
    schema: json,
    expiresAt: z.number().optional(),
    /** 'approval': a person decides whether a `needsApproval` tool call runs; absent: a step.ask. */
    kind: z.enum(['ask', 'approval']).optional(),
    /** The harness version its call began under (docs/deploys.md); absent on older records. */
    version: z.string().optional(),
  }),
  /** `principal`: who answered (or approved), when the caller named one. */
  'harness.tool.answer': z.object({ toolCallId: z.string(), questionId: z.string(), value: json, principal: z.string().optional() }),
  /** step.waitForEvent began to wait (once: a run again keeps the timeout); `scope` 'session': only its session's events wake it. */
  'harness.tool.wait': z.object({ toolCallId: z.string(), name: z.string(), event: z.string(), key: z.string(), until: z.number(), scope }),
  /** The event a step.waitForEvent took: its payload as the step's value. */
  'harness.tool.event': z.object({
    toolCallId: z.string(),
    name: z.string(),
    event: z.string(),
    key: z.string(),
    scope,
    payload: json.optional(),
  }),
  'harness.tool.suspended': z.object({
    toolCallId: z.string(),
    until: z.number(),
    kind: z.enum(['sleep', 'ask', 'agent', 'retry', 'event', 'limit', 'children']),
  }),
  'harness.tool.result': z
    .object({
      toolCallId: z.string(),
      name: z.string(),
      // absent both: the tool returned nothing
      result: json.optional(),
      error: toolError.optional(),
    })
    .refine((r) => r.result === undefined || r.error === undefined, 'a result and an error at once'),
  'harness.input.settled': z.object({
    inputId: z.string(),
    outcome: z.enum(['completed', 'failed', 'aborted']),
    text: z.string().optional(),
    error: toolError.optional(),
    /** Who aborted the turn, when the caller named one. */
    principal: z.string().optional(),
  }),
  /**
   * `session.rerun`: a failed or aborted turn runs again (rerunTurn.lua). `calls`: the calls whose
   * failed results it drops (they run again); every other kept result stays kept (R19).
   */
  'harness.turn.rerun': z.object({
    inputId: z.string(),
    rerunId: z.string(),
    at: z.number(),
    calls: z.array(z.string()).optional(),
    /** Calls the operator named to run again although the rerun would keep them (`rerun({ again })`). */
    again: z.array(z.string()).optional(),
    principal: z.string().optional(),
  }),
  /** A failed model call the turn's `onModelError` policy retries: the try count and the next time, durable across crashes. */
  'harness.turn.retry': z.object({
    inputId: z.string(),
    attempt: z.number().int().positive(),
    error: toolError,
    nextAt: z.number(),
  }),
  /** The policy ran out (`onExhausted: 'pause'`): the turn stays open until `session.resume(inputId)`. */
  'harness.turn.paused': z.object({ inputId: z.string(), error: toolError, at: z.number() }),
  'harness.turn.resumed': z.object({ inputId: z.string(), at: z.number() }),
  /**
   * `turn.beforeFinish` sent the model back to work: its messages follow the response it saw
   * (`responses`: how many responses the turn had), and count as cycle `cycle`. Ephemeral ones are never stored.
   */
  'harness.turn.finish': z.object({
    inputId: z.string(),
    cycle: z.number().int().positive(),
    responses: z.number().int().nonnegative(),
    messages: z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string() })),
  }),
  /**
   * A compaction of the model's view (docs/compaction.md): the turns through `through` leave the view
   * of every later model call, which sees `summary` (and a marker for `omitted` turns no summary
   * covers) in their place; the tool results of the turns through `cleared` read as a stub. The log
   * itself keeps every entry (R21). Written once per cut, on the compaction it builds on (`base`:
   * its entry id; R22). `reason`: 'budget' | 'background' | 'overflow' | 'manual' (a string, so a
   * newer version's reason still reads).
   */
  'harness.compaction': z.object({
    strategy: z.string(),
    reason: z.string(),
    /** The turn whose model call it was made for, when a turn made it. */
    inputId: z.string().optional(),
    base: z.string().optional(),
    through: turnRef.optional(),
    summary: z.string().optional(),
    omitted: tokenCount.optional(),
    cleared: turnRef.optional(),
    /** The view's token count before and after (docs/compaction.md, "Counting"). */
    tokens: z.object({ before: tokenCount, after: tokenCount }),
    /** The token usage of its summary calls, when they reported any. */
    usage: usageSchema.optional(),
    principal: z.string().optional(),
    at: z.number(),
  }),
  'harness.recovery': z.object({ reason: z.string(), toolCallId: z.string().optional(), inputId: z.string().optional() }),
  /** A fork's origin (host.fork, docs/compaction.md): the entries before it are `from`'s turns' copies, under their ids there. */
  'harness.fork': forkRecord,
  'harness.usage': usageRecordSchema,
  'harness.budget.exceeded': budgetExceededSchema,
} as const

/** The `type` of a harness record. */
export type HarnessRecordType = keyof typeof harnessRecordSchemas
/**
 * What a tool call came to, as its `harness.tool.result` holds it: a result (absent: the tool returned
 * nothing) or a tool error, never both (the schema's refine checks it on write and read).
 */
export type ToolOutcome = { result?: unknown; error?: undefined } | { error: ToolErrorPayload; result?: undefined }

type RecordFields<K extends HarnessRecordType> = K extends 'harness.tool.result'
  ? Omit<z.infer<(typeof harnessRecordSchemas)[K]>, 'result' | 'error'> & ToolOutcome
  : z.infer<(typeof harnessRecordSchemas)[K]>

/** A record the harness writes (`harness.*`, docs/architecture.md); `switch (record.type)` narrows it. */
export type HarnessRecord = {
  [K in HarnessRecordType]: { type: K } & RecordFields<K>
}[HarnessRecordType]
export type RecordOf<K extends HarnessRecordType> = Extract<HarnessRecord, { type: K }>

/** A user record added with `append`: any JSON object whose type does not start with `harness.`. */
export type AppRecord = { type: string; [key: string]: unknown }
/** A record of the session log: one of the harness's own (`harness.*`) or an app record a tool appended. */
export type LogRecord = HarnessRecord | AppRecord

export { RESERVED_PREFIX }

/**
 * The record types of a session's conversation: what its projection indexes (commands/includes/conversation.lua);
 * of harness.tool.result, only the results of calls a model response asked for (conversationOf).
 */
export const CONVERSATION_TYPES = [
  'harness.input',
  'harness.model.response',
  'harness.tool.result',
  'harness.input.settled',
  'harness.turn.retry',
  'harness.turn.paused',
  'harness.turn.resumed',
  'harness.turn.finish',
  'harness.turn.rerun',
  'harness.compaction',
] as const

/** The turn records a turn writes beside its responses (turnRecord.lua). */
export type TurnRecordType = 'harness.turn.retry' | 'harness.turn.paused' | 'harness.turn.resumed' | 'harness.turn.finish'

/** Narrows a record on its type (an app record's `type: string` keeps `===` from narrowing the union). */
export function hasType<K extends HarnessRecordType>(record: LogRecord, type: K): record is RecordOf<K> {
  return record.type === type
}

function isHarnessType(type: string): type is HarnessRecordType {
  return Object.hasOwn(harnessRecordSchemas, type)
}

/**
 * Narrows a record of the log to the harness's own (`harness.*` of a type this version knows), so a
 * `switch (record.type)` over it is checked for exhaustiveness. The record was validated on write and
 * read, so its type names its shape.
 */
export function isHarnessRecord(record: LogRecord): record is HarnessRecord {
  return isHarnessType(record.type)
}

/** A value of unknown origin (an event's payload) as a harness record, checked against its schema; undefined when it is not one. */
export function asHarnessRecord(value: unknown): HarnessRecord | undefined {
  try {
    const record = parseRecord(value, 'read')
    return record !== 'skip' && isHarnessRecord(record) ? record : undefined
  } catch {
    return undefined
  }
}

/**
 * Validates one record (app records need only be JSON, which a record read from the log is by
 * construction). Returns the parsed record, `'skip'` for an unknown `harness.*` type (written by
 * a newer version), or throws a message describing what is wrong.
 */
export function parseRecord(raw: unknown, mode: 'write' | 'read' = 'write'): LogRecord | 'skip' {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('not a JSON object')
  const type = (raw as { type?: unknown }).type
  if (typeof type !== 'string' || type.length === 0) throw new Error('no string "type" field')
  if (type.startsWith(RESERVED_PREFIX)) {
    if (!isHarnessType(type)) return 'skip'
    const parsed = harnessRecordSchemas[type].safeParse(raw)
    if (!parsed.success) throw new Error(`${type}: ${z.prettifyError(parsed.error).replace(/\n/g, '; ')}`)
    return { type, ...parsed.data } as HarnessRecord
  }
  // on read the value came from JSON.parse: it is JSON by construction
  if (mode === 'write' && !json.safeParse(raw).success) throw new Error(`${type}: not JSON`)
  return raw as AppRecord
}

/** The entries of a session's conversation, from entries of its log in log order (what its projection holds). */
export function conversationOf<E extends { record: LogRecord }>(entries: E[]): E[] {
  const calls = new Set<string>()
  return entries.filter(({ record }) => {
    if (hasType(record, 'harness.model.response')) for (const call of record.toolCalls) calls.add(call.toolCallId)
    if (hasType(record, 'harness.tool.result')) return calls.has(record.toolCallId)
    return (CONVERSATION_TYPES as readonly string[]).includes(record.type)
  })
}
