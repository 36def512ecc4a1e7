import { isRecord, type LogEntry, type RecordOf, type ToolCallRecord } from '../log/index.js'

export interface TurnFold {
  input?: LogEntry<RecordOf<'harness.input'>>
  /** This turn's model responses, in order. */
  responses: Array<RecordOf<'harness.model.response'>>
  results: Map<string, RecordOf<'harness.tool.result'>>
  /** Calls of the last response that have no result yet. */
  pending: ToolCallRecord[]
  settled?: RecordOf<'harness.input.settled'>
  /** This turn's entries the model sees: the input (and inputs that joined it), its own responses and results. */
  conversation: LogEntry[]
  /** An input joined the turn (busy 'steer') after its last response: the model has not seen it yet. */
  steeredSinceAnswer: boolean
}

/**
 * Folds the session log (from the turn's input on) into the state of one turn. The log is the only
 * source of truth: any worker can continue any turn from this fold after a crash.
 */
export function foldTurn(entries: LogEntry[], inputId: string, steered: ReadonlySet<string> = new Set()): TurnFold {
  const fold: TurnFold = { responses: [], results: new Map(), pending: [], conversation: [], steeredSinceAnswer: false }
  const ownCalls = new Set<string>()
  for (const entry of entries) {
    if (!fold.input) {
      if (isRecord(entry, 'harness.input') && entry.record.inputId === inputId) {
        fold.input = entry
        fold.conversation.push(entry)
      }
      continue
    }
    if (isRecord(entry, 'harness.input') && steered.has(entry.record.inputId)) {
      fold.conversation.push(entry)
      fold.steeredSinceAnswer = true
    } else if (isRecord(entry, 'harness.model.response') && entry.record.inputId === inputId) {
      fold.steeredSinceAnswer = false
      fold.responses.push(entry.record)
      for (const c of entry.record.toolCalls) ownCalls.add(c.toolCallId)
      fold.conversation.push(entry)
    } else if (isRecord(entry, 'harness.tool.result') && ownCalls.has(entry.record.toolCallId)) {
      fold.results.set(entry.record.toolCallId, entry.record)
      fold.conversation.push(entry)
    } else if (isRecord(entry, 'harness.input.settled') && entry.record.inputId === inputId) {
      fold.settled = entry.record
    }
  }
  const last = fold.responses.at(-1)
  fold.pending = last ? last.toolCalls.filter((c) => !fold.results.has(c.toolCallId)) : []
  return fold
}
