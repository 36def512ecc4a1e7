// The model's view as a fresh host builds it from the log (R21): what the compaction and reset tests compare the live calls with.
import type { ModelMessage } from '@tanstack/ai'
import type { LogEntry } from '../../src/log/index.js'
import { buildMessages } from '../../src/turn/model.js'
import { turnView } from '../../src/turn/view.js'

/** The view each logged model response was made from, rebuilt from the whole conversation as a fresh host reads it. */
export function rebuiltViews(conversation: LogEntry[]): ModelMessage[][] {
  const views: ModelMessage[][] = []
  for (const [at, entry] of conversation.entries()) {
    if (entry.record.type !== 'harness.model.response') continue
    const inputId = (entry.record as { inputId: string }).inputId
    views.push(buildMessages(turnView(conversation.slice(0, at), inputId, []).entries))
  }
  return views
}
