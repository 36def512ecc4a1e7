import type { RecordOf, SessionLog } from '../log/index.js'

/** How a turn ended (`session.settled`): its outcome, the model's last text, or the error with its code (docs/errors.md). */
export interface Settled {
  outcome: 'completed' | 'failed' | 'aborted'
  text?: string
  error?: { message: string; code?: string }
}

/** A settled record as `session.settled` answers it. */
export const toSettled = (r: RecordOf<'harness.input.settled'>): Settled => ({
  outcome: r.outcome,
  ...(r.text !== undefined ? { text: r.text } : {}),
  ...(r.error ? { error: r.error } : {}),
})

/** What a settle's message carries (its record, sealed under a codec): opened first when it is. */
export function settledFrom(log: SessionLog, payload: string): Settled | Promise<Settled> {
  const record = log.stream.openedRecord<RecordOf<'harness.input.settled'>>(JSON.parse(payload))
  return record instanceof Promise ? record.then(toSettled) : toSettled(record)
}
