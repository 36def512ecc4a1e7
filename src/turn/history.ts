import { isRecord, type LogEntry, type SessionLog } from '../log/index.js'

const CONVERSATION = ['harness.input', 'harness.model.response', 'harness.tool.result', 'harness.input.settled']

/**
 * The conversation before a turn, as its model calls see it: everything logged before the turn's
 * input, and, for a turn that waited in line (busy 'queue'), the turns that settled after its input
 * was logged but before it ran. Inputs still waiting in line are not part of it.
 */
export async function historyOf(log: SessionLog, inputEntryId: string, firstOwnEntryId: string | undefined): Promise<LogEntry[]> {
  const before = await log.read({ before: inputEntryId })
  const between = await log.read({ after: inputEntryId, ...(firstOwnEntryId ? { before: firstOwnEntryId } : {}), types: CONVERSATION })
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
