import { ENCRYPTED_TEXT, isSealed, openValue, sealValue, type CodecPlace, type PayloadCodec } from '../codec/index.js'
import { DurableHarnessError } from '../errors/index.js'
import { isHarnessRecord, type AppRecord, type LogRecord } from './records.js'

/**
 * Which fields of a record hold what a user or a model wrote, and are sealed by the host's codec
 * (docs/encryption.md has the table). A path is a field, a field of each item of an array field
 * (`toolCalls[].input`), or a field of an object field (`error.message`). Every other field (ids,
 * types, statuses, times, principals, metadata tags, error codes) stays clear: the scripts and the
 * indexes read them. A record type of the app's own (ctx.append) has every field but `type` sealed.
 */
const SEALED_PATHS: Readonly<Record<string, readonly string[]>> = {
  'harness.input': ['text', 'context'],
  'harness.model.response': ['text', 'toolCalls[].input'],
  'harness.tool.requested': ['input'],
  'harness.tool.step': ['value'],
  'harness.tool.step.retry': ['error.message'],
  'harness.tool.ask': ['message'],
  'harness.tool.answer': ['value'],
  'harness.tool.event': ['payload'],
  'harness.tool.result': ['result', 'error.message'],
  'harness.input.settled': ['text', 'error.message'],
  'harness.turn.retry': ['error.message'],
  'harness.turn.paused': ['error.message'],
  'harness.turn.finish': ['messages[].content'],
  'harness.compaction': ['summary'],
}

/** A sealed path as it is walked: the record's field, whether it holds an array, the item's or object's field. */
interface SealedPath {
  name: string
  many: boolean
  inner?: string
  /** The place's field: the path without its `[]`. */
  field: string
}

function parsePath(path: string): SealedPath {
  const [head = '', inner] = path.split('.', 2)
  const many = head.endsWith('[]')
  const name = many ? head.slice(0, -2) : head
  return { name, many, ...(inner === undefined ? {} : { inner }), field: inner === undefined ? name : `${name}.${inner}` }
}

// parsed once: every record read and written walks them
const PARSED_PATHS: ReadonlyMap<string, readonly SealedPath[]> = new Map(
  Object.entries(SEALED_PATHS).map(([type, paths]) => [type, paths.map(parsePath)]),
)

/** The sealed paths of a record's type (an app record's: its own fields). */
function sealedPathsOf(record: LogRecord): readonly SealedPath[] {
  if (!isHarnessRecord(record))
    return Object.keys(record).flatMap((key) => (key === 'type' ? [] : [{ name: key, many: false, field: key }]))
  return PARSED_PATHS.get(record.type) ?? []
}

type Slot = { holder: Record<string, unknown>; key: string; field: string }

/** Every present slot of the record's sealed paths, over a copy of the containers it walks (the record is not changed). */
function slotsOf(record: LogRecord): { copy: AppRecord; slots: Slot[] } {
  const copy: AppRecord = { ...record }
  const slots: Slot[] = []
  for (const { name, many, inner, field } of sealedPathsOf(record)) {
    const value = copy[name]
    if (inner === undefined) {
      if (value !== undefined) slots.push({ holder: copy, key: name, field })
    } else if (many && Array.isArray(value)) {
      const items = value.map((item: unknown) => (isObject(item) ? { ...item } : item))
      copy[name] = items
      for (const item of items) if (isObject(item) && item[inner] !== undefined) slots.push({ holder: item, key: inner, field })
    } else if (!many && isObject(value)) {
      const object = { ...value }
      copy[name] = object
      if (object[inner] !== undefined) slots.push({ holder: object, key: inner, field })
    }
  }
  return { copy, slots }
}

/** An error of a value this process cannot open (no codec, a key it lacks, a value that fails its check). */
export const isCodecError = (error: unknown): boolean => error instanceof DurableHarnessError && error.code.startsWith('codec_')

/** What a value this process cannot open does: 'throw' its codec error, or 'mask': it reads as [encrypted] (a dashboard without the key). */
export type Sealed = 'throw' | 'mask'

/** A stored value as it was written; with 'mask', one this process cannot open reads as [encrypted]. */
export async function openOrMask(codec: PayloadCodec | undefined, stored: unknown, place: CodecPlace, sealed: Sealed): Promise<unknown> {
  try {
    return await openValue(codec, stored, place)
  } catch (error) {
    if (sealed === 'mask' && isCodecError(error)) return ENCRYPTED_TEXT
    throw error
  }
}

/** A string that starts with NUL: sealed, or a plain one escaped (the only stored values reading must change). */
export function startsWithNul(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith('\u0000')
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** True when a slot of the record holds a string that starts with NUL: sealed, or a plain one escaped. */
export function needsOpening(record: LogRecord): boolean {
  const fields: AppRecord = record
  for (const { name, many, inner } of sealedPathsOf(record)) {
    const value = fields[name]
    if (inner === undefined) {
      if (startsWithNul(value)) return true
    } else if (many && Array.isArray(value)) {
      if (value.some((item: unknown) => isObject(item) && startsWithNul(item[inner]))) return true
    } else if (isObject(value) && startsWithNul(value[inner])) return true
  }
  return false
}

/** True for the JSON text of a string that starts with NUL (JSON.stringify escapes it): no parse needed to tell. */
export function jsonStartsWithNul(json: string | undefined): boolean {
  return json?.startsWith('"\\u0000') === true
}

/**
 * The record as it is stored: each slot sealed by `codec`, bound to the session, the record's type
 * and the field (so a ciphertext moved to another session or field does not open). Without a codec,
 * only a string that starts with NUL changes (escaped, so no plain value reads as sealed).
 */
export async function sealRecord<R extends LogRecord>(codec: PayloadCodec | undefined, sessionId: string, record: R): Promise<R> {
  const { copy, slots } = slotsOf(record)
  if (slots.length === 0) return record
  await Promise.all(
    slots.map(async (slot) => {
      slot.holder[slot.key] = await sealValue(codec, slot.holder[slot.key], placeOf(sessionId, record, slot.field))
    }),
  )
  return sameShape(copy, record) ? copy : record
}

/** The record with each sealed slot read as `[encrypted]` (a reader with no key for it: the dashboard), escaped ones unescaped. */
export async function maskRecord<R extends LogRecord>(sessionId: string, record: R): Promise<R> {
  const { copy, slots } = slotsOf(record)
  for (const slot of slots) {
    const value = slot.holder[slot.key]
    slot.holder[slot.key] = isSealed(value) ? ENCRYPTED_TEXT : await openValue(undefined, value, placeOf(sessionId, record, slot.field))
  }
  return sameShape(copy, record) ? copy : record
}

/** The record as it was written: each sealed slot opened (a key it lacks: CodecKeyMissingError), escaped ones unescaped. */
export async function openRecord<R extends LogRecord>(codec: PayloadCodec | undefined, sessionId: string, record: R): Promise<R> {
  const { copy, slots } = slotsOf(record)
  await Promise.all(
    slots.map(async (slot) => {
      slot.holder[slot.key] = await openValue(codec, slot.holder[slot.key], placeOf(sessionId, record, slot.field))
    }),
  )
  return sameShape(copy, record) ? copy : record
}

/**
 * A sealed or opened copy has its record's type: every sealed path is a string field or a JSON one,
 * and holds a string (sealed) or the value it was written with (opened).
 */
function sameShape<R extends LogRecord>(copy: LogRecord, record: R): copy is R {
  return copy.type === record.type
}

/**
 * The place a slot's value is bound to. An event's payload is the value of its step (the steps hash
 * holds it under the step's name, as it holds a step.do's value): both are bound to the step's place,
 * so the record and the hash share one sealed value.
 */
function placeOf(sessionId: string, record: LogRecord, field: string): CodecPlace {
  if (record.type === 'harness.tool.event' && field === 'payload') return stepValuePlace(sessionId)
  return { sessionId, type: record.type, field }
}

/** Where a value of the steps hash is bound: a step.do's value, or an event's payload. */
export function stepValuePlace(sessionId: string): CodecPlace {
  return { sessionId, type: 'harness.tool.step', field: 'value' }
}

/**
 * An input's state (the inputs hash) as it was written: its text and its context are its
 * `harness.input` record's sealed values, opened at the same places. Synchronous without them.
 */
export async function openInput<S extends { text: string; context?: string }>(
  codec: PayloadCodec | undefined,
  sessionId: string,
  input: S,
): Promise<S> {
  const sealedContext = jsonStartsWithNul(input.context)
  if (!startsWithNul(input.text) && !sealedContext) return input
  const context: unknown = sealedContext && input.context !== undefined ? JSON.parse(input.context) : undefined
  const place = (field: string) => ({ sessionId, type: 'harness.input', field })
  const text = startsWithNul(input.text) ? String(await openValue(codec, input.text, place('text'))) : input.text
  const opened = startsWithNul(context) ? JSON.stringify(await openValue(codec, context, place('context'))) : input.context
  return { ...input, text, ...(opened === undefined ? {} : { context: opened }) }
}

/** An input's state sealed for the inputs hash of `sessionId` (a fork's copy): openInput's reverse. */
export async function sealInput<S extends { text: string; context?: string }>(
  codec: PayloadCodec | undefined,
  sessionId: string,
  input: S,
): Promise<S> {
  if (!codec && !startsWithNul(input.text) && !jsonStartsWithNul(input.context)) return input
  const place = (field: string) => ({ sessionId, type: 'harness.input', field })
  const text = String(await sealValue(codec, input.text, place('text')))
  const context =
    input.context === undefined ? undefined : JSON.stringify(await sealValue(codec, JSON.parse(input.context), place('context')))
  return { ...input, text, ...(context === undefined ? {} : { context }) }
}

/**
 * Where a tool job's data keeps its call's input (BullMQ's job hash): a runTool request's place, so a
 * new call's request and job share one sealed input (callStart.ts startCall).
 */
const jobInputPlace = (sessionId: string): CodecPlace => ({ sessionId, type: 'harness.tool.requested', field: 'input' })

/** A call's input as its tool job's data holds it: sealed by the codec; as is without one (a NUL-led string escaped). */
export function sealJobInput(codec: PayloadCodec | undefined, sessionId: string, input: unknown): unknown {
  return !codec && !startsWithNul(input) ? input : sealValue(codec, input, jobInputPlace(sessionId))
}

/** A tool job's input as the call was made with (its fingerprint, and the tool, read this). */
export function openJobInput(codec: PayloadCodec | undefined, sessionId: string, stored: unknown): unknown {
  return startsWithNul(stored) ? openValue(codec, stored, jobInputPlace(sessionId)) : stored
}
