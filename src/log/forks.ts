import { scripts } from './commands/index.js'
import type { LogRecord } from './records.js'
import { encodeRecord, type LogEntry, type LogStream } from './stream.js'
import { sealInput } from './sealedRecords.js'

/**
 * host.fork (forkSession.lua): makes the session of `stream`, which must not exist yet, from copied
 * entries (each under its source stream id), their inputs' settled states and the harness.fork record.
 * 'exists' when the session has a log or inputs already (nothing written).
 */
export async function writeFork(
  stream: LogStream,
  entries: ReadonlyArray<LogEntry>,
  inputs: ReadonlyArray<[string, { text: string; context?: string }]>,
  record: LogRecord,
): Promise<{ status: 'forked'; entryId: string } | { status: 'exists' }> {
  // the copies are sealed for this session: a ciphertext opens only in the session it was sealed for
  const sealedEntries = await Promise.all(entries.map(async (e) => [e.id, encodeRecord(await stream.sealed(e.record))]))
  const sealedInputs = await Promise.all(
    inputs.map(async ([id, state]) => [id, JSON.stringify(await sealInput(stream.codec, stream.sessionId, state))]),
  )
  const reply = await stream.script(scripts.forkSession, {
    keys: stream.scriptKeys,
    args: {
      entries: JSON.stringify(sealedEntries),
      inputs: JSON.stringify(sealedInputs),
      record: encodeRecord(record),
      sessionId: stream.sessionId,
      now: Date.now(),
    },
  })
  return reply[0] === 'forked' ? { status: 'forked', entryId: reply[1] } : { status: 'exists' }
}
