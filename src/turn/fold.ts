import { isRecord, type LogEntry, type RecordOf, type ToolCallRecord } from '../log/index.js'

export interface TurnFold {
  input?: LogEntry<RecordOf<'harness.input'>>
  /** This turn's model responses, in order. */
  responses: Array<RecordOf<'harness.model.response'>>
  results: Map<string, RecordOf<'harness.tool.result'>>
  /** Calls of the last response that have no result yet. */
  pending: ToolCallRecord[]
  settled?: RecordOf<'harness.input.settled'>
}

/**
 * Folds the session log (from the turn's input on) into the state of one turn. The log is the only
 * source of truth: any worker can continue any turn from this fold after a crash. What the model is
 * shown is the turn's view (view.ts).
 */
export function foldTurn(entries: LogEntry[], inputId: string): TurnFold {
  const fold: TurnFold = { responses: [], results: new Map(), pending: [] }
  const ownCalls = new Set<string>()
  for (const entry of entries) {
    if (!fold.input) {
      if (isRecord(entry, 'harness.input') && entry.record.inputId === inputId) fold.input = entry
      continue
    }
    if (isRecord(entry, 'harness.model.response') && entry.record.inputId === inputId) {
      fold.responses.push(entry.record)
      for (const c of entry.record.toolCalls) ownCalls.add(c.toolCallId)
    } else if (isRecord(entry, 'harness.tool.result') && ownCalls.has(entry.record.toolCallId)) {
      fold.results.set(entry.record.toolCallId, entry.record)
    } else if (isRecord(entry, 'harness.input.settled') && entry.record.inputId === inputId) {
      fold.settled = entry.record
    }
  }
  const last = fold.responses.at(-1)
  fold.pending = last ? last.toolCalls.filter((c) => !fold.results.has(c.toolCallId)) : []
  return fold
}
