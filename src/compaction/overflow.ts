/**
 * Context overflows as the providers word them (the message of `@tanstack/ai`'s RUN_ERROR, or of
 * the error an adapter throws, carries the provider's text; its `code` the provider's code).
 */
const OVERFLOW_TEXTS = [
  /context[_ ]length[_ ]exceeded/i, // OpenAI's code, also quoted in relayed bodies
  /maximum context length is \d+/i, // OpenAI Chat Completions, OpenRouter, vLLM, DeepSeek
  /exceeds the context window/i, // OpenAI Responses
  /prompt is too long/i, // Anthropic
  /input length and `?max_tokens`? exceed context limit/i, // Anthropic
  /input is too long for requested model/i, // Anthropic on Bedrock
  /input token count.{0,40}exceeds the maximum/i, // Gemini
  /reduce the length of the messages/i, // OpenAI, Groq
  /exceeds the available context size/i, // llama.cpp
  /greater than the context length/i, // LM Studio
  /context window exceeds limit/i, // MiniMax
  /model_context_window_exceeded/i,
  /request_too_large/i, // Anthropic 413: the request is over the size the API takes
]
const OVERFLOW_CODES = new Set(['context_length_exceeded', 'model_context_window_exceeded', 'request_too_large'])
/** A rate limit or quota also says "tokens" and "exceeded": it passes by waiting, not by compacting. */
const NOT_OVERFLOW = [/rate.?limit/i, /too many requests/i, /per minute|per day|\btpm\b|\brpm\b/i, /quota/i]

/** The texts an error of unknown shape carries: its message and code, and its nested provider body's. */
function textsOf(error: unknown, depth = 0): string[] {
  if (typeof error === 'string') return [error]
  if ((typeof error !== 'object' && typeof error !== 'function') || error === null || depth > 3) return []
  const texts: string[] = []
  for (const key of ['message', 'code', 'type']) {
    let value: unknown
    try {
      value = Reflect.get(error, key)
    } catch {
      continue
    }
    if (typeof value === 'string' && value !== '') texts.push(value)
  }
  for (const key of ['error', 'rawEvent', 'body']) {
    let nested: unknown
    try {
      nested = Reflect.get(error, key)
    } catch {
      continue
    }
    if (nested !== undefined && nested !== error) texts.push(...textsOf(nested, depth + 1))
  }
  return texts
}

/**
 * Whether a model error says the request's context was over the model's window: OpenAI's
 * `context_length_exceeded` ("maximum context length is N tokens"), Anthropic's "prompt is too long",
 * Gemini's "input token count … exceeds the maximum", and the wording of common OpenAI-compatible
 * servers. Takes what a `turn.onModelError` policy gets (`{ message, code }`), an adapter's RUN_ERROR
 * chunk, an SDK error, or a string. A rate limit that counts tokens is not one.
 *
 * @example
 * ```ts
 * turn: { onModelError: ({ error }) => (isContextOverflowError(error) ? { action: 'fail' } : undefined) }
 * ```
 */
export function isContextOverflowError(error: unknown): boolean {
  const texts = textsOf(error)
  if (texts.some((t) => NOT_OVERFLOW.some((p) => p.test(t)))) return false
  return texts.some((t) => OVERFLOW_CODES.has(t.toLowerCase()) || OVERFLOW_TEXTS.some((p) => p.test(t)))
}

const number = (s: string | undefined) => (s === undefined ? undefined : Number(s.replace(/[,_\s]/g, '')))

/** The sizes an overflow's message gives, when it gives them: the request's tokens and the model's limit. */
export function overflowSizes(message: string): { tokens?: number; limit?: number } {
  const patterns: Array<[RegExp, 'tl' | 'lt']> = [
    [/maximum context length is ([\d,]+) tokens.*?(?:resulted in|requested(?: about)?) ([\d,]+) tokens/is, 'lt'],
    [/prompt is too long: ([\d,]+) tokens > ([\d,]+)/i, 'tl'],
    [/input token count \(([\d,]+)\) exceeds the maximum number of tokens allowed \(([\d,]+)\)/i, 'tl'],
    [/exceed context limit: ([\d,]+) \+ [\d,]+ > ([\d,]+)/i, 'tl'],
  ]
  for (const [pattern, order] of patterns) {
    const m = pattern.exec(message)
    if (!m) continue
    const [a, b] = [number(m[1]), number(m[2])]
    return order === 'tl' ? { tokens: a, limit: b } : { tokens: b, limit: a }
  }
  const limit = /maximum context length is ([\d,]+)/i.exec(message)
  return limit ? { limit: number(limit[1]) } : {}
}
