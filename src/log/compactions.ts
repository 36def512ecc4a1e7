import { scripts } from './commands/index.js'
import type { RecordOf } from './records.js'
import { encodeRecord, type LogStream } from './stream.js'
import { usageDay, usageDayKey } from './keys.js'
import { usageCounts } from './usageTotals.js'

/**
 * The compactions of a session's model view (docs/compaction.md): each a `harness.compaction` record
 * in the log, written once per cut (R22). A part of SessionLog (sessionLog.ts) over the session's stream.
 */
export class SessionCompactions {
  constructor(readonly stream: LogStream) {}

  /**
   * Logs the compaction if the session's latest compaction is still `record.base` (none: no base):
   * 'ok' with its entry id, or 'stale' with the latest one's (another compaction landed first; this
   * one is dropped). The view's reads start after the cut's last turn from then on (logCompaction.lua).
   * `trimAfterMs`: the harness's compaction.trimAfter; the cut's span is due for trimming that long after.
   */
  async log(
    record: RecordOf<'harness.compaction'>,
    harness = '',
    calls = 0,
    trimAfterMs?: number,
  ): Promise<{ status: 'ok' | 'stale'; entryId: string }> {
    const day = usageDayKey(this.stream.prefix, this.stream.shard, this.stream.shards, harness, usageDay(Date.now()))
    const [status, entryId] = await this.stream.script(scripts.logCompaction, {
      keys: { ...this.stream.scriptKeys, usageDay: day },
      args: {
        base: record.base ?? '',
        throughEntry: record.through?.entryId ?? '',
        record: encodeRecord(await this.stream.sealed(record)),
        // its summary calls count like any model call (docs/spend.md)
        counts: calls > 0 ? usageCounts(record.usage, calls) : '',
        model: record.usage?.model ?? '',
        inputId: record.inputId ?? '',
        principal: record.principal ?? '',
        trimAfter: trimAfterMs === undefined ? '' : String(trimAfterMs),
        trimDue: trimAfterMs === undefined ? '' : String(record.at + trimAfterMs),
        sessionId: this.stream.sessionId,
      },
    })
    return { status, entryId }
  }
}
