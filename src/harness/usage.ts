import { isRecord, type ModelUsage, type SessionLog } from '../log/index.js'

/** Token usage of a session: per turn (by inputId) and in all, summed from its logged model responses. */
export interface SessionUsage {
  total: ModelUsage
  turns: Record<string, ModelUsage>
}

/** Sums the `usage` of the session's logged model responses and compactions' summary calls, per turn (in log order) and in all. */
export async function usageOf(log: SessionLog): Promise<SessionUsage> {
  const zero = (): ModelUsage => ({ promptTokens: 0, completionTokens: 0, totalTokens: 0 })
  const add = (sum: ModelUsage, usage: ModelUsage | undefined) => {
    sum.promptTokens += usage?.promptTokens ?? 0
    sum.completionTokens += usage?.completionTokens ?? 0
    sum.totalTokens += usage?.totalTokens ?? 0
  }
  const total = zero()
  const turns = new Map<string, ModelUsage>() // a Map, then fromEntries: an inputId may be "__proto__"
  for (const entry of await log.stream.read({ types: ['harness.model.response', 'harness.compaction'] })) {
    // a compaction's summary calls count with the turn that made it (session.compact's: in the total only)
    if (!isRecord(entry, 'harness.model.response') && !isRecord(entry, 'harness.compaction')) continue
    const { inputId, usage } = entry.record
    if (inputId !== undefined) {
      if (!turns.has(inputId)) turns.set(inputId, zero())
      add(turns.get(inputId)!, usage)
    }
    add(total, usage)
  }
  return { total, turns: Object.fromEntries(turns) }
}
