import { scripts } from './commands/index.js'
import type { RecordOf } from './records.js'
import { encodeRecord, type LogStream } from './stream.js'

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
   */
  async log(record: RecordOf<'harness.compaction'>): Promise<{ status: 'ok' | 'stale'; entryId: string }> {
    const [status, entryId] = await this.stream.script(scripts.logCompaction, {
      keys: this.stream.scriptKeys,
      args: { base: record.base ?? '', throughEntry: record.through?.entryId ?? '', record: encodeRecord(record) },
    })
    return { status, entryId }
  }
}
