import type { LogEntry, RecordOf, ToolCallRecord } from '../log/index.js'

export interface TurnFold {
  input?: LogEntry<RecordOf<'harness.input'>>
  /** This turn's model responses, in order. */
  responses: Array<RecordOf<'harness.model.response'>>
  results: Map<string, RecordOf<'harness.tool.result'>>
  /** Calls of the last response that have no result yet. */
  pending: ToolCallRecord[]
  settled?: RecordOf<'harness.input.settled'>
  /** This turn's entries the model sees: the input and its own responses and results. */
  conversation: LogEntry[]
}

/**
 * Folds the session log (from the turn's input on) into the state of one turn. The log is the only source of truth: any worker
 * can continue any turn from this fold after a crash.
 */
export function foldTurn(entries: LogEntry[], inputId: string): TurnFold {
  const fold: TurnFold = { responses: [], results: new Map(), pending: [], conversation: [] }
  const ownCalls = new Set<string>()
  for (const entry of entries) {
    const r = entry.record
    if (!fold.input) {
      if (r.type === 'harness.input' && (r as RecordOf<'harness.input'>).inputId === inputId) {
        fold.input = entry as LogEntry<RecordOf<'harness.input'>>
        fold.conversation.push(entry)
      }
      continue
    }
    if (r.type === 'harness.model.response' && (r as RecordOf<'harness.model.response'>).inputId === inputId) {
      const response = r as RecordOf<'harness.model.response'>
      fold.responses.push(response)
      for (const c of response.toolCalls) ownCalls.add(c.toolCallId)
      fold.conversation.push(entry)
    } else if (r.type === 'harness.tool.result' && ownCalls.has((r as RecordOf<'harness.tool.result'>).toolCallId)) {
      fold.results.set((r as RecordOf<'harness.tool.result'>).toolCallId, r as RecordOf<'harness.tool.result'>)
      fold.conversation.push(entry)
    } else if (r.type === 'harness.input.settled' && (r as RecordOf<'harness.input.settled'>).inputId === inputId) {
      fold.settled = r as RecordOf<'harness.input.settled'>
    }
  }
  const last = fold.responses.at(-1)
  fold.pending = last ? last.toolCalls.filter((c) => !fold.results.has(c.toolCallId)) : []
  return fold
}
