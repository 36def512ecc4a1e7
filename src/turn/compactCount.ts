import { convertSchemaToJsonSchema } from '@tanstack/ai'
import { estimateTextTokens, estimateTokens } from '../compaction/index.js'
import type { CompactionTurn, Harness } from '../core/index.js'
import { compareIds, isRecord } from '../log/index.js'
import { buildMessages } from './model.js'
import type { TurnView } from './view.js'

/** What the model is sent besides the conversation, counted once a harness: its system prompts and its tools. */
const overheads = new WeakMap<Harness, number>()

/** The estimated tokens of a harness's system prompts and tools (as JSON Schema, as the adapter sends them). */
export function overheadTokens(harness: Harness): number {
  let tokens = overheads.get(harness)
  if (tokens !== undefined) return tokens
  const prompts = (harness.systemPrompts ?? []).map((p) => (typeof p === 'string' ? p : p.content)).join('\n')
  const tools = harness.tools.map((t) => ({
    name: t.name,
    description: t.description,
    ...(t.inputSchema ? { parameters: convertSchemaToJsonSchema(t.inputSchema) } : {}),
  }))
  tokens = estimateTextTokens(prompts) + (tools.length ? estimateTextTokens(JSON.stringify(tools)) : 0)
  overheads.set(harness, tokens)
  return tokens
}

/** A view counted: what the next model call would be sent, in tokens, and how it was counted. */
export interface ViewCount {
  tokens: number
  /** 'usage' when the provider's count of the last model call was the base, else 'estimate'. */
  by: 'estimate' | 'usage'
}

/**
 * The count of a view (docs/compaction.md, "Counting"): characters / 4 of its messages, system prompts
 * and tools; with `countTokens: 'usage'`, the input and output tokens the provider reported for the
 * last model call the view holds (made after the latest compaction, so it saw this view's start) plus
 * the estimate of the messages after it, and the estimate when there is none.
 */
export function countView(
  harness: Harness,
  view: TurnView,
  mode: 'estimate' | 'usage' = harness.compaction?.countTokens ?? 'estimate',
): ViewCount {
  const messages = buildMessages(view.entries)
  if (mode === 'usage') {
    const since = view.compaction?.id
    for (let i = view.entries.length - 1; i >= 0; i--) {
      const entry = view.entries[i]!
      if (!isRecord(entry, 'harness.model.response')) continue
      const { usage } = entry.record
      if (!usage || usage.estimated || (since !== undefined && compareIds(entry.id, since) < 0)) break
      // buildMessages is prefix-stable: the messages of entries[0..i] start the whole view's
      const upTo = buildMessages(view.entries.slice(0, i + 1)).length
      return { tokens: usage.promptTokens + usage.completionTokens + estimateTokens(messages.slice(upTo)), by: 'usage' }
    }
  }
  return { tokens: overheadTokens(harness) + estimateTokens(messages), by: 'estimate' }
}

/** The turns of a view a compaction may cut, each with its messages and their tokens, and the running turn's tokens. */
export function viewTurns(view: TurnView): { turns: CompactionTurn[]; currentTokens: number } {
  const turns = view.turns.map((t) => {
    const messages = buildMessages(view.entries.slice(t.start, t.end))
    return { inputId: t.inputId, messages, tokens: estimateTokens(messages) }
  })
  return { turns, currentTokens: estimateTokens(buildMessages(view.entries.slice(view.currentStart))) }
}
