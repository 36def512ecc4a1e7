import { EventType, type AdapterYieldChunk, type AnyTextAdapter, type ModelMessage, type TokenUsage } from '@tanstack/ai'

/** A tool call a scripted model response makes. */
export interface ScriptedToolCall {
  name: string
  input: unknown
  /** Default: `call-<model call>-<index>`, unique within a session and the same in every process. */
  id?: string
}

/** One scripted model response: tool calls, then text. */
export interface ScriptedResponse {
  text?: string
  toolCalls?: ScriptedToolCall[]
  /** Token usage reported on RUN_FINISHED, `@tanstack/ai`'s TokenUsage (details and `cost` included). Default: none reported. */
  usage?: TokenUsage
}

/** A script entry: a response, or a function of the messages the model is shown and the model call number. */
export type ScriptEntry = ScriptedResponse | ((context: { messages: ModelMessage[]; call: number }) => ScriptedResponse)

/** Options of `scriptedModel`: its name, and whether it streams text in pieces. */
export interface ScriptedModelOptions {
  name?: string
  /** The adapter's `model` (what spend is counted under, docs/spend.md). Default: 'scripted'. */
  model?: string
  /** Stream each text in pieces of `chars` characters, `delayMs` apart, as a real model writes. Default: one piece. */
  stream?: { chars: number; delayMs: number }
}

/**
 * A deterministic `@tanstack/ai` text adapter with no network: model call N of a session (counted by
 * the assistant messages it is shown, so any process answers the same) gets script entry N. Tool
 * calls first, then text; runs with plain `chat()` and in a durable harness alike.
 *
 * @example
 * ```ts
 * const adapter = scriptedModel([
 *   { toolCalls: [{ name: 'checkout', input: { orderId: '42' } }] },
 *   ({ messages }) => ({ text: `Done: ${String(messages.at(-1)?.content)}` }),
 * ])
 * ```
 */
export function scriptedModel(script: ReadonlyArray<ScriptEntry>, options: ScriptedModelOptions = {}): AnyTextAdapter {
  return {
    kind: 'text',
    name: options.name ?? 'scripted',
    model: options.model ?? 'scripted',
    // type-only in @tanstack/ai (never read at run time); an adapter of any options
    '~types': {
      providerOptions: {},
      inputModalities: [],
      messageMetadataByModality: {},
      toolCapabilities: [],
      toolCallMetadata: {},
      systemPromptMetadata: {},
    },
    async *chatStream(request: { messages: ModelMessage[] }): AsyncGenerator<AdapterYieldChunk> {
      const call = request.messages.filter((m) => m.role === 'assistant').length
      const entry = script[call]
      if (!entry) throw new Error(`scriptedModel: no response scripted for model call ${call} (the script has ${script.length}).`)
      const response = typeof entry === 'function' ? entry({ messages: request.messages, call }) : entry
      const ts = Date.now()
      const runId = `run-${call}`
      yield { type: EventType.RUN_STARTED, runId, threadId: 'scripted', timestamp: ts }
      const toolCalls = response.toolCalls ?? []
      for (const [index, tc] of toolCalls.entries()) {
        const toolCallId = tc.id ?? `call-${call}-${index}`
        yield { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: tc.name, toolName: tc.name, index, timestamp: ts }
        yield { type: EventType.TOOL_CALL_ARGS, toolCallId, delta: JSON.stringify(tc.input ?? {}), timestamp: ts }
        yield { type: EventType.TOOL_CALL_END, toolCallId, input: tc.input ?? {}, timestamp: ts }
      }
      if (response.text) {
        const messageId = `msg-${call}`
        yield { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant', timestamp: ts }
        const size = options.stream?.chars ?? response.text.length
        for (let i = 0; i < response.text.length; i += size) {
          if (i > 0 && options.stream?.delayMs) await new Promise((resolve) => setTimeout(resolve, options.stream!.delayMs))
          yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: response.text.slice(i, i + size), timestamp: ts }
        }
        yield { type: EventType.TEXT_MESSAGE_END, messageId, timestamp: ts }
      }
      yield {
        type: EventType.RUN_FINISHED,
        runId,
        threadId: 'scripted',
        finishReason: toolCalls.length ? 'tool_calls' : 'stop',
        ...(response.usage ? { usage: response.usage } : {}),
        timestamp: ts,
      }
    },
    async structuredOutput() {
      throw new Error('scriptedModel does not support structured output.')
    },
  }
}
