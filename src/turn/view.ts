import { CLEARED_RESULT, compactionText } from '../compaction/index.js'
import { compareIds, isRecord, type LogEntry, type RecordOf } from '../log/index.js'

/** A turn before the running one, as the view shows it: its input and where its block lies in `entries`. */
interface ViewTurn {
  inputId: string
  /** The stream id of its `harness.input`. */
  entryId: string
  start: number
  end: number
}

/** What one model call of a turn is shown, from the session's conversation. */
export interface TurnView {
  /** The entries, in the order the model reads them: the compaction's, the turns before this one, then this turn. */
  entries: LogEntry[]
  /** Inputs that joined this turn (busy 'steer') that no model response has seen yet, in arrival order. */
  unseenJoined: string[]
  /** The session's latest compaction, which the view folds in (its summary first; the turns it cut left out). */
  compaction?: LogEntry<RecordOf<'harness.compaction'>>
  /** The turns before this one in `entries`, oldest first: what a compaction may cut. */
  turns: ViewTurn[]
  /** Where this turn's block starts in `entries`. */
  currentStart: number
}

type Outcome = RecordOf<'harness.input.settled'>['outcome']

/**
 * The model's view of a turn (docs/harness.md, "What a turn's model sees"), one pass over the
 * conversation. Each turn reads as its input, then for each response the joined inputs it was shown
 * first, the response and its results; the turns come in the order of their inputs. A turn sees the
 * turns whose input came before its own (they ran first: the line is in log order), never an input
 * still waiting. An input aborted before any model call saw it is left out everywhere (R18): a queued
 * one that never ran, a joined one no response was shown. `joined`: the inputs that joined this turn.
 *
 * The latest `harness.compaction` in the conversation is folded in (R21: the same view from any
 * worker, from the whole conversation or from the compaction's read pointer on): the turns whose
 * input is at or before its cut are out of the view, its summary comes first, and the results of the
 * turns it cleared read as a stub. `inputId` '' builds the view a next turn would get (session.compact).
 */
export function turnView(conversation: LogEntry[], inputId: string, joined: readonly string[]): TurnView {
  const inputs = new Map<string, LogEntry>()
  const order: string[] = []
  const outcomes = new Map<string, Outcome>()
  const responses = new Map<string, LogEntry<RecordOf<'harness.model.response'>>[]>()
  const results = new Map<string, LogEntry>()
  // beforeFinish cycles by turn: their messages follow the response they answered
  const cycles = new Map<string, LogEntry<RecordOf<'harness.turn.finish'>>[]>()
  const seen = new Set<string>()
  const position = new Map<string, number>()
  let compaction: LogEntry<RecordOf<'harness.compaction'>> | undefined
  for (const [at, entry] of conversation.entries()) {
    position.set(entry.id, at)
    if (isRecord(entry, 'harness.input')) {
      if (!inputs.has(entry.record.inputId)) order.push(entry.record.inputId)
      inputs.set(entry.record.inputId, entry)
    } else if (isRecord(entry, 'harness.input.settled')) outcomes.set(entry.record.inputId, entry.record.outcome)
    else if (isRecord(entry, 'harness.model.response')) {
      const list = responses.get(entry.record.inputId) ?? []
      list.push(entry)
      responses.set(entry.record.inputId, list)
      for (const id of entry.record.joined ?? []) seen.add(id)
    } else if (isRecord(entry, 'harness.tool.result')) results.set(entry.record.toolCallId, entry)
    else if (isRecord(entry, 'harness.turn.rerun')) {
      // a rerun opens the turn again and drops the failed results of the calls that run again
      outcomes.delete(entry.record.inputId)
      for (const id of entry.record.calls ?? []) results.delete(id)
    } else if (isRecord(entry, 'harness.turn.finish'))
      cycles.set(entry.record.inputId, [...(cycles.get(entry.record.inputId) ?? []), entry])
    else if (isRecord(entry, 'harness.compaction')) compaction = entry
  }
  const cut = compaction?.record.through?.entryId
  const cleared = compaction?.record.cleared?.entryId
  const atOrBefore = (id: string, bound: string | undefined) => {
    const input = inputs.get(id)
    return bound !== undefined && input !== undefined && compareIds(input.id, bound) <= 0
  }
  const joinedHere = new Set(joined)
  const reached = (id: string) => responses.has(id) || seen.has(id)
  const dropped = (id: string) => outcomes.get(id) === 'aborted' && !reached(id)
  const entries: LogEntry[] = []
  if (compaction && compactionText(compaction.record) !== undefined) entries.push(compaction)
  const emitted = new Set<string>()
  const emit = (id: string) => {
    const input = inputs.get(id)
    if (!input || emitted.has(id)) return
    emitted.add(id)
    entries.push(input)
  }
  const turnOf = (owner: string) => {
    emit(owner)
    const stub = atOrBefore(owner, cleared)
    for (const [index, response] of (responses.get(owner) ?? []).entries()) {
      const shown = response.record.joined
      // a response logged before responses named what they were shown saw the joined inputs before it
      if (shown === undefined && owner === inputId) {
        for (const id of joined) if ((position.get(inputs.get(id)?.id ?? '') ?? Infinity) < position.get(response.id)!) emit(id)
      }
      for (const id of shown ?? []) emit(id)
      entries.push(response)
      for (const call of response.record.toolCalls) {
        const result = results.get(call.toolCallId)
        if (result) entries.push(stub ? clearedResult(result) : result)
      }
      for (const cycle of cycles.get(owner) ?? []) if (cycle.record.responses === index + 1) entries.push(cycle)
    }
  }
  const turns: ViewTurn[] = []
  // a rerun of a turn a compaction cut sees the summary and itself (the turns after it ran later)
  if (!atOrBefore(inputId, cut)) {
    for (const id of order) {
      if (id === inputId) break
      if (seen.has(id) || joinedHere.has(id) || dropped(id) || atOrBefore(id, cut)) continue
      const start = entries.length
      turnOf(id)
      turns.push({ inputId: id, entryId: inputs.get(id)!.id, start, end: entries.length })
    }
  }
  const currentStart = entries.length
  if (inputId !== '') turnOf(inputId)
  const unseenJoined = joined.filter((id) => inputs.has(id) && !emitted.has(id) && !dropped(id))
  for (const id of unseenJoined) emit(id)
  return { entries, unseenJoined, ...(compaction ? { compaction } : {}), turns, currentStart }
}

/** A tool result as a cleared turn shows it: its call, with a stub for its outcome. */
function clearedResult(entry: LogEntry): LogEntry {
  if (!isRecord(entry, 'harness.tool.result')) return entry
  const { toolCallId, name } = entry.record
  return { id: entry.id, record: { type: 'harness.tool.result', toolCallId, name, result: CLEARED_RESULT } }
}
