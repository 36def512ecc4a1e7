import { isRecord, type LogEntry } from '../log/index.js'

/**
 * The conversation before a turn, as its model calls see it, from the session's conversation
 * (`log.conversation()`): everything before the turn's input, and, for a turn that waited in line
 * (busy 'queue'), the turns that settled after its input was logged but before it ran. Inputs still
 * waiting in line are not part of it. `start`: the index of the turn's input; `firstOwn`: the index of
 * its first own entry after the input (its first response or a steered input), if any.
 */
export function historyOf(conversation: LogEntry[], start: number, firstOwn: number | undefined): LogEntry[] {
  const before = conversation.slice(0, start)
  const between = conversation.slice(start + 1, firstOwn)
  if (between.length === 0) return before
  const settled = new Set(between.flatMap((e) => (isRecord(e, 'harness.input.settled') ? [e.record.inputId] : [])))
  const calls = new Set<string>()
  const earlier = between.filter((e) => {
    if (isRecord(e, 'harness.input') || isRecord(e, 'harness.input.settled')) return settled.has(e.record.inputId)
    if (isRecord(e, 'harness.model.response')) {
      if (!settled.has(e.record.inputId)) return false
      for (const call of e.record.toolCalls) calls.add(call.toolCallId)
      return true
    }
    return isRecord(e, 'harness.tool.result') && calls.has(e.record.toolCallId)
  })
  return [...before, ...earlier]
}
