import type { CompactionPlan, CompactionReason } from '../core/index.js'
import type { ModelUsage, RecordOf } from '../log/index.js'

type Compaction = RecordOf<'harness.compaction'>

/** What a cleared tool result reads as (clearToolResults). */
export const CLEARED_RESULT = '[tool result cleared to save context]'

/** The marker of turns no summary covers (evictOldest). */
function omittedMarker(turns: number): string {
  return `[${turns} earlier ${turns === 1 ? 'turn' : 'turns'} of this conversation ${turns === 1 ? 'is' : 'are'} not shown.]`
}

/** What stands for the turns a compaction took out of the view: their summary, then the marker of those no summary covers. */
export function compactionSummary(record: Pick<Compaction, 'summary' | 'omitted'>): string | undefined {
  const text = [record.summary ?? '', record.omitted ? omittedMarker(record.omitted) : ''].filter(Boolean).join('\n\n')
  return text || undefined
}

/**
 * The message the model sees in place of the turns a compaction took out of its view (its summary
 * and marker, headed); undefined when it shows nothing there (it only cleared tool results).
 */
export function compactionText(record: Pick<Compaction, 'summary' | 'omitted' | 'strategy'>): string | undefined {
  const summary = compactionSummary(record)
  // a reset's note is shown as the caller wrote it
  if (summary === undefined || record.strategy === RESET) return summary
  return record.summary ? `Summary of the earlier conversation:\n${summary}` : summary
}

/** The strategy (and reason) of the compaction session.reset(note) logs. */
export const RESET = 'reset'

/** A turn as a compaction names it: its input's id and stream id. */
interface TurnRef {
  inputId: string
  entryId: string
}

/** What a plan changes, checked against the view it was made for: the record to log, or undefined when it changes nothing. */
export function nextCompaction(
  previous: (Compaction & { entryId: string }) | undefined,
  plan: CompactionPlan,
  turns: ReadonlyArray<TurnRef>,
  meta: { strategy: string; reason: CompactionReason; inputId?: string; principal?: string; usage?: ModelUsage },
): Omit<Compaction, 'tokens'> | undefined {
  const indexOf = (inputId: string | undefined, what: string) => {
    if (inputId === undefined) return -1
    const at = turns.findIndex((t) => t.inputId === inputId)
    if (at < 0)
      throw new TypeError(`the ${meta.strategy} strategy's plan names ${what} ${JSON.stringify(inputId)}, which is no turn it was given`)
    return at
  }
  const cut = indexOf(plan.through, 'through')
  const clear = indexOf(plan.clearToolResultsThrough, 'clearToolResultsThrough')
  if (plan.summary !== undefined && typeof plan.summary !== 'string')
    throw new TypeError(`the ${meta.strategy} strategy's summary is no string`)
  // a clear the cut covers, or one no further than the last one, changes nothing
  const previousClear = previous?.cleared ? turns.findIndex((t) => t.inputId === previous.cleared!.inputId) : -1
  const clears = clear > Math.max(cut, previousClear)
  if (cut < 0 && !clears) return undefined
  const through = cut >= 0 ? turns[cut]! : previous?.through
  const summarized = cut >= 0 && plan.summary !== undefined
  const summary = summarized ? plan.summary : previous?.summary
  const omitted = summarized ? 0 : (previous?.omitted ?? 0) + cut + 1
  const clearedAt = clears ? clear : previousClear > cut ? previousClear : -1
  const cleared = clearedAt >= 0 ? turns[clearedAt]! : undefined
  return {
    type: 'harness.compaction',
    strategy: meta.strategy,
    reason: meta.reason,
    ...(meta.inputId ? { inputId: meta.inputId } : {}),
    ...(previous ? { base: previous.entryId } : {}),
    ...(through ? { through: { inputId: through.inputId, entryId: through.entryId } } : {}),
    ...(summary !== undefined ? { summary } : {}),
    ...(omitted ? { omitted } : {}),
    ...(cleared ? { cleared: { inputId: cleared.inputId, entryId: cleared.entryId } } : {}),
    ...(meta.usage ? { usage: meta.usage } : {}),
    ...(meta.principal ? { principal: meta.principal } : {}),
    at: Date.now(),
  }
}
