import { isRecord, type LogEntry, type RecordOf, type ToolCallRecord } from '../log/index.js'

export interface TurnFold {
  input?: LogEntry<RecordOf<'harness.input'>>
  /** This turn's model responses, in order. */
  responses: Array<RecordOf<'harness.model.response'>>
  results: Map<string, RecordOf<'harness.tool.result'>>
  /** Calls of the last response that have no result yet. */
  pending: ToolCallRecord[]
  settled?: RecordOf<'harness.input.settled'>
  /** Retries of the next model call so far (since the last response or resume), and the last one's. */
  retries: number
  retry?: RecordOf<'harness.turn.retry'>
  /** The turn is paused (its policy ran out with onExhausted 'pause') and not resumed since. */
  paused?: RecordOf<'harness.turn.paused'>
  /** `beforeFinish` cycles so far; `continued`: the last response has a cycle after it (the model goes on). */
  finishCycles: number
  continued: boolean
  /** Turn records (retries, pauses, resumes, cycles, reruns): progress of the turn, like responses and results. */
  turnRecords: number
}

/**
 * Folds the session log (from the turn's input on) into the state of one turn. The log is the only
 * source of truth: any worker can continue any turn from this fold after a crash. What the model is
 * shown is the turn's view (view.ts).
 */
export function foldTurn(entries: LogEntry[], inputId: string): TurnFold {
  const fold: TurnFold = { responses: [], results: new Map(), pending: [], retries: 0, finishCycles: 0, continued: false, turnRecords: 0 }
  const ownCalls = new Set<string>()
  for (const entry of entries) {
    if (!fold.input) {
      if (isRecord(entry, 'harness.input') && entry.record.inputId === inputId) fold.input = entry
      continue
    }
    const { record } = entry
    if ('inputId' in record && record.inputId !== inputId) continue
    if (isRecord(entry, 'harness.model.response')) {
      fold.responses.push(entry.record)
      for (const c of entry.record.toolCalls) ownCalls.add(c.toolCallId)
      fold.retries = 0
      delete fold.retry
      fold.continued = false
    } else if (isRecord(entry, 'harness.tool.result')) {
      if (ownCalls.has(entry.record.toolCallId)) fold.results.set(entry.record.toolCallId, entry.record)
    } else if (isRecord(entry, 'harness.input.settled')) {
      fold.settled = entry.record
    } else if (isRecord(entry, 'harness.turn.retry')) {
      fold.turnRecords++
      fold.retries++
      fold.retry = entry.record
    } else if (isRecord(entry, 'harness.turn.paused')) {
      fold.turnRecords++
      fold.paused = entry.record
    } else if (isRecord(entry, 'harness.turn.resumed')) {
      // a resume starts the model call's retries afresh
      fold.turnRecords++
      delete fold.paused
      delete fold.retry
      fold.retries = 0
    } else if (isRecord(entry, 'harness.turn.rerun')) {
      // session.rerun: the turn is open again; the calls it reset lose their failed results (they
      // run again), every other result stays (R19), and the model call's retries start afresh
      fold.turnRecords++
      delete fold.settled
      delete fold.paused
      delete fold.retry
      fold.retries = 0
      for (const id of entry.record.calls ?? []) fold.results.delete(id)
    } else if (isRecord(entry, 'harness.compaction')) {
      // a compaction made for this turn's model call (or by session.compact) moves it on too
      fold.turnRecords++
    } else if (isRecord(entry, 'harness.turn.finish')) {
      fold.turnRecords++
      fold.finishCycles = Math.max(fold.finishCycles, entry.record.cycle)
      fold.continued = entry.record.responses === fold.responses.length
    }
  }
  const last = fold.responses.at(-1)
  fold.pending = last ? last.toolCalls.filter((c) => !fold.results.has(c.toolCallId)) : []
  return fold
}
