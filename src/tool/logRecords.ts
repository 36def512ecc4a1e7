import { createCapability } from '@tanstack/ai'
import { ReservedRecordTypeError } from '../errors/index.js'
import { RESERVED_PREFIX, type LogRecord } from '../log/index.js'
import type { AppendRecord } from './context.js'
import { encodeChecked, toJsonCopy } from './json.js'
import type { SecretStore } from './secrets.js'

/** What `getLogRecords(ctx)` gives a middleware's tool hook. */
export interface LogRecordsWriter {
  /**
   * Records for the session log, checked at once (a `harness.` type, not JSON, over `maxValueBytes`, a
   * session secret: each throws), landing in the write of the call's result, as a tool's `append`
   * (R9): an attempt that parks or is cut lands none of them.
   */
  append(records: AppendRecord[]): void
}

/**
 * The log-records capability of a durable tool call's middleware context: `getLogRecords(ctx).append([...])`
 * in `onBeforeToolCall` / `onAfterToolCall`, named as TanStack's harness names it. Model-call hooks
 * and plain `chat()` do not provide it (`getLogRecords(ctx, { optional: true })` is then undefined).
 */
const LogRecordsCapability = createCapability<LogRecordsWriter>()('logRecords')
const [getLogRecordsOf, provideLogRecordsOf] = LogRecordsCapability

/**
 * A middleware tool hook's writer of records that land with the call's result (R9).
 *
 * @example
 * ```ts
 * const audit: ChatMiddleware = {
 *   onAfterToolCall(ctx, info) {
 *     getLogRecords(ctx).append([{ type: 'app.audit', tool: info.toolName }])
 *   },
 * }
 * ```
 */
export const getLogRecords = getLogRecordsOf
/** Provides the writer `getLogRecords(ctx)` returns, in a durable call's middleware context. */
export const provideLogRecords = provideLogRecordsOf

/** A writer that checks records as `append` does and keeps them for the write that lands the call. */
export function hookRecords(secrets: SecretStore, maxValueBytes: number): { writer: LogRecordsWriter; records: LogRecord[] } {
  const records: LogRecord[] = []
  const writer: LogRecordsWriter = {
    append(batch) {
      if (!Array.isArray(batch))
        throw new TypeError('getLogRecords(ctx).append takes an array of records: append([{ type: "app.x", ... }]).')
      const checked = batch.map((record, i) => {
        const type: unknown = record?.type
        if (typeof type !== 'string' || type.length === 0 || type.startsWith(RESERVED_PREFIX)) throw new ReservedRecordTypeError(type)
        const what = `middleware log record [${i}] (${type})`
        const copy = toJsonCopy(record, what)
        secrets.assertAbsent(encodeChecked(copy, what, maxValueBytes), what)
        return copy as LogRecord
      })
      records.push(...checked)
    },
  }
  return { writer, records }
}
