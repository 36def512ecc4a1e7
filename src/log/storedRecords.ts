import { InvalidRecordError } from '../errors/index.js'
import type { RedisClient } from './client.js'
import { recordFormatKey, shardCountKey } from './keys.js'
import { parseRecord, type LogRecord } from './records.js'

/**
 * The stored form of the five records every parked call writes (docs/decisions/parked-call-memory.md):
 * a JSON array, its first item the record's tag and the rest its fields in a fixed order, the one
 * optional field last (absent: a shorter array). A stored value that starts with `[` is one of these;
 * every other record is stored as its JSON object, as before. Readers take both; a deployment writes
 * the arrays only once its record format is 2 (claimRecordFormat), which no version before them sets.
 *
 *   ["q", toolCallId, name, input]                                      harness.tool.requested
 *   ["b", toolCallId, name, attempt, replay, reason, version?]          harness.tool.started
 *   ["s", toolCallId, name, value?]                                     harness.tool.step
 *   ["z", toolCallId, name, wakeAt]                                     harness.tool.sleep
 *   ["p", toolCallId, until, kind]                                      harness.tool.suspended
 *
 * One-to-one: the tag names the type, each position one field, JSON escapes every id and name.
 */
const FIELDS = {
  q: ['harness.tool.requested', ['toolCallId', 'name', 'input'], 0],
  b: ['harness.tool.started', ['toolCallId', 'name', 'attempt', 'replay', 'reason', 'version'], 1],
  s: ['harness.tool.step', ['toolCallId', 'name', 'value'], 1],
  z: ['harness.tool.sleep', ['toolCallId', 'name', 'wakeAt'], 0],
  p: ['harness.tool.suspended', ['toolCallId', 'until', 'kind'], 0],
} as const satisfies Record<string, readonly [string, readonly string[], 0 | 1]>
type Tag = keyof typeof FIELDS

const TAGS: readonly Tag[] = ['q', 'b', 's', 'z', 'p']
const TAG_OF: ReadonlyMap<string, Tag> = new Map(TAGS.map((tag) => [FIELDS[tag][0], tag]))
const isTag = (tag: string): tag is Tag => Object.hasOwn(FIELDS, tag)

/** The record's stored array when its type has one (the record is checked already), else undefined. */
function compactRecordJson(record: LogRecord): string | undefined {
  const tag = TAG_OF.get(record.type)
  if (tag === undefined) return undefined
  const [, fields, optional] = FIELDS[tag]
  const values: unknown[] = [tag]
  const byName: Record<string, unknown> = { ...record }
  for (const [i, field] of fields.entries()) {
    const value = byName[field]
    if (value === undefined && optional === 1 && i === fields.length - 1) break
    values.push(value)
  }
  return JSON.stringify(values)
}

/**
 * The record a stored array holds, checked against its schema; 'skip' for a tag of a newer version
 * (as an unknown `harness.*` type is skipped). Throws, saying what is wrong, on any other shape.
 */
export function parseCompactRecord(stored: unknown[]): LogRecord | 'skip' {
  const tag = stored[0]
  if (typeof tag !== 'string' || tag.length === 0) throw new Error('a stored array without a tag')
  if (!isTag(tag)) return 'skip'
  const [type, fields, optional] = FIELDS[tag]
  const given = stored.length - 1
  if (given !== fields.length && !(optional === 1 && given === fields.length - 1)) {
    throw new Error(`${type}: a stored array of ${given} fields (expected ${optional ? `${fields.length - 1} or ` : ''}${fields.length})`)
  }
  const record: Record<string, unknown> = { type }
  for (let i = 0; i < given; i++) record[fields[i]!] = stored[i + 1]
  return parseRecord(record, 'read')
}

/** The formats a deployment may write: 1, every record an object; 2, the five arrays above too. */
export type RecordFormat = 1 | 2

/**
 * The deployment's record format under `prefix`. A new deployment (no shard count stored yet: no host
 * has run on it) starts at 2; one that has run before stays at what it stores (1 when absent) until
 * an operator sets 2 once every process runs a version that reads it (docs/deploy.md).
 */
export async function claimRecordFormat(redis: RedisClient, prefix: string): Promise<RecordFormat> {
  const key = recordFormatKey(prefix)
  if ((await redis.exists(shardCountKey(prefix))) === 0) await redis.set(key, '2', 'NX')
  return (await redis.get(key)) === '2' ? 2 : 1
}

/** Validates a record against its schema and encodes it for the stream (harness records as parsed: no unknown fields). */
export function encodeRecord(record: LogRecord): string {
  return JSON.stringify(checkedRecord(record))
}

/** encodeRecord, or the record's stored array when `compact` and its type has one. */
export function encodeStored(record: LogRecord, compact: boolean): string {
  const parsed = checkedRecord(record)
  return (compact && compactRecordJson(parsed)) || JSON.stringify(parsed)
}

/** The record checked against its schema (InvalidRecordError, saying what is wrong, when it fails). */
function checkedRecord(record: LogRecord): LogRecord {
  let parsed: LogRecord | 'skip'
  try {
    parsed = parseRecord(record)
    if (parsed === 'skip') throw new Error(`unknown reserved type ${record.type}`)
  } catch (error) {
    throw new InvalidRecordError(`Record refused on write: ${error instanceof Error ? error.message : String(error)}`)
  }
  return parsed
}

/** A stored record's JSON as its object: a stored array expanded (left as stored when it is not a record's). */
export function objectJson(stored: string | undefined): string {
  if (stored === undefined) return 'null'
  if (!stored.startsWith('[')) return stored
  try {
    const value: unknown = JSON.parse(stored)
    const record = Array.isArray(value) ? parseCompactRecord(value) : 'skip'
    return record === 'skip' ? stored : JSON.stringify(record)
  } catch {
    return stored
  }
}
