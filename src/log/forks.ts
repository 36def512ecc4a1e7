import { scripts } from './commands/index.js'
import type { LogRecord } from './records.js'
import { encodeRecord, type LogEntry, type LogStream } from './stream.js'

/**
 * host.fork (forkSession.lua): makes the session of `stream`, which must not exist yet, from copied
 * entries (each under its source stream id), their inputs' settled states and the harness.fork record.
 * 'exists' when the session has a log or inputs already (nothing written).
 */
export async function writeFork(
  stream: LogStream,
  entries: ReadonlyArray<LogEntry>,
  inputs: ReadonlyArray<[string, string]>,
  record: LogRecord,
): Promise<{ status: 'forked'; entryId: string } | { status: 'exists' }> {
  const reply = await stream.script(scripts.forkSession, {
    keys: stream.scriptKeys,
    args: {
      entries: JSON.stringify(entries.map((e) => [e.id, encodeRecord(e.record)])),
      inputs: JSON.stringify(inputs),
      record: encodeRecord(record),
      sessionId: stream.sessionId,
      now: Date.now(),
    },
  })
  return reply[0] === 'forked' ? { status: 'forked', entryId: reply[1] } : { status: 'exists' }
}
