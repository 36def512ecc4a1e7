import type { AnyTextAdapter, ModelMessage } from '@tanstack/ai'
import type { CompactionInput, CompactionPlan, CompactionStrategy, CompactionTurn } from '../core/index.js'
import { CompactionConfigError } from '../errors/index.js'
import { contentText } from './tokens.js'

/** What `summarizeOldest({ summarize })` may be given as a function: the turns to summarize, and the summary before them. */
export interface SummarizeInput {
  /** The messages of the turns being cut, oldest first. */
  messages: ModelMessage[]
  /** The same as plain text (with the summary before them first), as the default summarizer sends it. */
  transcript: string
  /** What the model saw so far in place of the turns cut before, if anything. */
  previous?: string
  signal: AbortSignal
}

/** A summarizer of your own: returns the summary (it is redacted of session secrets before it is stored). */
export type SummarizeFn = (input: SummarizeInput) => string | Promise<string>

/** `summarizeOldest({ keepRecentTokens, cut?, summarize? })` (docs/compaction.md). */
export interface SummarizeOldestOptions {
  /** The newest turns kept as they are: the running turn and the turns before it, newest first, while they fit in this. */
  keepRecentTokens: number
  /** Where a cut may fall: at a turn's start (the only one). */
  cut?: 'turn'
  /** A `@tanstack/ai` text adapter to write the summary with (default the harness's), or a function of your own. */
  summarize?: AnyTextAdapter | SummarizeFn
}

/** `evictOldest({ keepRecentTokens? })` and `clearToolResults({ keepRecentTokens? })`: what is kept as it is (default maxTokens / 2). */
export interface KeepRecentOptions {
  keepRecentTokens?: number
}

/** The instructions of the default summary call. */
const SUMMARY_PROMPT =
  'You write the summary of the earlier part of a conversation between a user and an assistant that uses tools, ' +
  "so the assistant can go on without those messages. Keep what the rest of the conversation needs: the user's goals, " +
  'constraints and preferences, decisions taken, facts learned from tools (ids, numbers, names, results), ' +
  'what is done and what remains to do, and open questions. Write plain prose, concise; no preamble.'

function checkKeep(where: string, value: unknown, optional: boolean): number | undefined {
  if (value === undefined && optional) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
    throw new CompactionConfigError(where, `keepRecentTokens must be a positive integer, got ${JSON.stringify(value)}`)
  return value
}

/**
 * The oldest turns to cut so that the newest ones (with the running turn, `input.currentTokens`) fit in
 * `keep` tokens: the index of the last turn to cut, or -1 for none. On an overflow the provider refused
 * what the count let through, so at most half of what the turns and the running turn count is kept.
 */
export function lastTurnToCut(input: CompactionInput, keep: number): number {
  const turnsTokens = input.turns.reduce((sum, t) => sum + t.tokens, 0)
  const room =
    (input.reason === 'overflow' ? Math.min(keep, Math.floor((turnsTokens + input.currentTokens) / 2)) : keep) - input.currentTokens
  let kept = 0
  for (let i = input.turns.length - 1; i >= 0; i--) {
    kept += input.turns[i]!.tokens
    if (kept > room) return i
  }
  return -1
}

/** The turns as plain text for a summary call: the summary before them first, then each message by its role. */
function transcriptOf(turns: ReadonlyArray<CompactionTurn>, previous?: string): string {
  const lines: string[] = []
  if (previous) lines.push(`Summary of the conversation before:\n${previous}`, '')
  for (const message of turns.flatMap((t) => t.messages)) {
    const text = contentText(message.content)
    if (message.role === 'tool') lines.push(`Tool result: ${text}`)
    else if (message.role === 'user') lines.push(`User: ${text}`)
    else {
      if (text) lines.push(`Assistant: ${text}`)
      for (const call of message.toolCalls ?? []) lines.push(`Assistant called ${call.function.name} ${call.function.arguments}`)
    }
  }
  return lines.join('\n')
}

/**
 * Takes the oldest turns out of the model's view, leaving a marker that counts them ("N earlier turns
 * are not shown"): the newest turns that fit in `keepRecentTokens` (default maxTokens / 2) stay.
 * No model call.
 */
export function evictOldest(options: KeepRecentOptions = {}): CompactionStrategy {
  const keep = checkKeep('evictOldest', options.keepRecentTokens, true)
  return {
    name: 'evictOldest',
    ...(keep ? { keepRecentTokens: keep } : {}),
    compact(input) {
      const last = lastTurnToCut(input, keep ?? Math.floor(input.maxTokens / 2))
      return last < 0 ? undefined : { through: input.turns[last]!.inputId }
    },
  }
}

/**
 * A model call writes a summary of the oldest turns (and of the summary before them), which the
 * model sees in their place; the newest turns that fit in `keepRecentTokens` stay as they are. The
 * cut falls at a turn's start. `summarize`: an adapter (default the harness's) or your function.
 */
export function summarizeOldest(options: SummarizeOldestOptions): CompactionStrategy {
  const keep = checkKeep('summarizeOldest', options?.keepRecentTokens, false)!
  if (options.cut !== undefined && options.cut !== 'turn')
    throw new CompactionConfigError('summarizeOldest', `cut must be 'turn', got ${JSON.stringify(options.cut)}`)
  const { summarize } = options
  const isAdapter = typeof summarize === 'object' && summarize !== null && Reflect.get(summarize, 'kind') === 'text'
  if (summarize !== undefined && typeof summarize !== 'function' && !isAdapter)
    throw new CompactionConfigError(
      'summarizeOldest',
      'summarize must be a @tanstack/ai text adapter or a function that returns the summary',
    )
  return {
    name: 'summarizeOldest',
    keepRecentTokens: keep,
    async compact(input): Promise<CompactionPlan | undefined> {
      const last = lastTurnToCut(input, keep)
      if (last < 0) return undefined
      const cut = input.turns.slice(0, last + 1)
      const transcript = transcriptOf(cut, input.summary)
      const summary =
        typeof summarize === 'function'
          ? await summarize({
              messages: cut.flatMap((t) => [...t.messages]),
              transcript,
              ...(input.summary ? { previous: input.summary } : {}),
              signal: input.signal,
            })
          : await input.model({
              messages: [{ role: 'user', content: transcript }],
              systemPrompts: [SUMMARY_PROMPT],
              ...(summarize ? { adapter: summarize } : {}),
            })
      if (typeof summary !== 'string')
        throw new TypeError(`summarizeOldest: the summarizer returned ${typeof summary}, not the summary text`)
      return { through: cut.at(-1)!.inputId, summary }
    },
  }
}

/**
 * Stubs the tool results of the oldest turns (their calls stay, each result reads "[tool result
 * cleared to save context]"): those of the turns beyond the newest that fit in `keepRecentTokens`
 * (default maxTokens / 2). Inputs and answers stay; a view still over the budget goes to the model as
 * it is (pair it with another strategy of your own for that).
 */
export function clearToolResults(options: KeepRecentOptions = {}): CompactionStrategy {
  const keep = checkKeep('clearToolResults', options.keepRecentTokens, true)
  return {
    name: 'clearToolResults',
    ...(keep ? { keepRecentTokens: keep } : {}),
    compact(input) {
      const last = lastTurnToCut(input, keep ?? Math.floor(input.maxTokens / 2))
      // the newest of those turns with a tool result: clearing past it saves nothing
      for (let i = last; i >= 0; i--)
        if (input.turns[i]!.messages.some((m) => m.role === 'tool')) return { clearToolResultsThrough: input.turns[i]!.inputId }
      return undefined
    },
  }
}
