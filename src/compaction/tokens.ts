import type { ModelMessage } from '@tanstack/ai'

/** Characters a token, the usual estimate for English text and JSON (docs/compaction.md, "Counting"). */
const CHARS_PER_TOKEN = 4
/** What a message costs beyond its text (role, separators), and a tool call beyond its name and arguments. */
const MESSAGE_OVERHEAD = 4

/** The estimated tokens of a text: its characters / 4, rounded up. */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN)
}

/** The text of a message's content: a string as it is, parts as their JSON. */
export function contentText(content: ModelMessage['content']): string {
  if (typeof content === 'string') return content
  if (content === null || content === undefined) return ''
  return JSON.stringify(content)
}

/** The estimated tokens of messages: each its text and tool calls, plus a small overhead a message. Deterministic. */
export function estimateTokens(messages: ReadonlyArray<ModelMessage>): number {
  let total = 0
  for (const message of messages) {
    total += MESSAGE_OVERHEAD + estimateTextTokens(contentText(message.content))
    for (const call of message.toolCalls ?? []) total += MESSAGE_OVERHEAD + estimateTextTokens(call.function.name + call.function.arguments)
  }
  return total
}
