import { convertSchemaToJsonSchema, fromSpecTokenUsage, type ChatMiddlewareConfig, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import type { Harness } from '../core/index.js'
import type { ModelCallHooks } from './middleware.js'
import { ModelCallError, modelErrorOf } from './modelErrors.js'
import { toolMessageContent } from '../core/index.js'
import { compactionText } from '../compaction/index.js'
import { isRecord, type LogEntry, type ModelToolCall, type ModelUsage, type RecordOf } from '../log/index.js'

export interface ModelResponse {
  text?: string
  toolCalls: ModelToolCall[]
  usage?: ModelUsage
}

/** Builds the conversation for the model from its view's entries (view.ts); tool results follow their call, in call order. */
export function buildMessages(entries: LogEntry[]): ModelMessage[] {
  const results = new Map<string, RecordOf<'harness.tool.result'>>()
  for (const entry of entries) if (isRecord(entry, 'harness.tool.result')) results.set(entry.record.toolCallId, entry.record)
  const messages: ModelMessage[] = []
  for (const entry of entries) {
    if (isRecord(entry, 'harness.input')) messages.push({ role: 'user', content: entry.record.text })
    // a compaction's summary (or marker) in place of the turns it took out of the view (view.ts)
    if (isRecord(entry, 'harness.compaction')) messages.push({ role: 'user', content: compactionText(entry.record) ?? '' })
    if (isRecord(entry, 'harness.turn.finish')) messages.push(...entry.record.messages)
    if (!isRecord(entry, 'harness.model.response')) continue
    const response = entry.record
    messages.push({
      role: 'assistant',
      content: response.text ?? null,
      ...(response.toolCalls.length
        ? {
            toolCalls: response.toolCalls.map((c) => ({
              id: c.modelToolCallId ?? c.toolCallId,
              type: 'function' as const,
              function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) },
            })),
          }
        : {}),
    })
    // the model reads its own ids; results are found by the stored ones
    for (const call of response.toolCalls) {
      const result = results.get(call.toolCallId)
      if (result) messages.push({ role: 'tool', toolCallId: call.modelToolCallId ?? call.toolCallId, content: toolMessageContent(result) })
    }
  }
  return messages
}

/**
 * One model call through the harness's `@tanstack/ai` text adapter, collected into text, tool calls
 * and token usage; `onText` hears each text delta as the model writes it. The adapter is called as
 * `chat()` calls it: tool schemas as JSON Schema, the abort signal on `request` (provider SDKs read it there).
 * The model is sent nothing until `hold` (the attempt's job lock and limit slot) is confirmed: a
 * worker paused past its lock makes no model call when it resumes.
 */
export async function callModel(
  harness: Harness,
  messages: ModelMessage[],
  signal?: AbortSignal,
  onText?: (delta: string) => void,
  hooks?: ModelCallHooks,
  hold?: { confirm(): Promise<void> | undefined },
): Promise<ModelResponse> {
  const abortController = new AbortController()
  for (const s of [signal, hooks?.signal]) s?.addEventListener('abort', () => abortController.abort(s.reason), { once: true })
  // middleware's onConfig may change what the model is sent (messages, system prompts, tools, model options)
  const initial: ChatMiddlewareConfig = { messages, systemPrompts: [...(harness.systemPrompts ?? [])], tools: [...harness.tools] }
  const config = hooks ? await hooks.config(initial) : initial
  // after the hooks (which may take a while), right before the provider is called
  const held = hold?.confirm()
  if (held) await held
  const stream = fromAdapter(abortController.signal, () =>
    harness.adapter.chatStream({
      model: harness.adapter.model,
      messages: config.providerMessages ?? config.messages,
      tools: config.tools.map((tool) => ({
        ...tool,
        inputSchema: tool.inputSchema ? convertSchemaToJsonSchema(tool.inputSchema) : undefined,
        outputSchema: tool.outputSchema ? convertSchemaToJsonSchema(tool.outputSchema) : undefined,
      })),
      ...(config.systemPrompts.length ? { systemPrompts: config.systemPrompts } : {}),
      ...(config.modelOptions ? { modelOptions: config.modelOptions } : {}),
      abortController,
      request: { signal: abortController.signal },
      logger: resolveDebugOption(false),
    }),
  )
  let text = ''
  let usage: ModelUsage | undefined
  // a START with an id seen before starts another call (a model may repeat ids); deltas go to the latest
  const calls: Array<{ id: string; name: string; args: string; input?: unknown }> = []
  const latest = new Map<string, (typeof calls)[number]>()
  try {
    for await (const raw of stream) {
      if (abortController.signal.aborted) throw abortController.signal.reason
      // middleware's onChunk replaces, expands or drops chunks before they are collected
      for (const chunk of hooks ? await hooks.chunk(raw) : [raw]) collect(chunk)
      if (hooks && raw.type === 'RUN_FINISHED') await hooks.finished(raw)
    }
  } catch (error) {
    // what the try got before it failed counts (docs/spend.md)
    if (error instanceof ModelCallError) error.sofar = { text: text + calls.map((c) => c.name + c.args).join(''), usage }
    // a hook's ctx.abort stopped the stream: the adapter may throw its own AbortError
    throw hooks?.signal.aborted ? hooks.signal.reason : error
  }
  await hooks?.done()
  const toolCalls = calls.map((c) => boundedCall(c.id, c.name, c.input ?? parseArgs(c.args), harness.durability.maxValueBytes))
  return { ...(text ? { text } : {}), toolCalls, ...(usage ? { usage } : {}) }

  function collect(chunk: StreamChunk) {
    switch (chunk.type) {
      case 'TEXT_MESSAGE_CONTENT': {
        // a chunk with the whole `content` so far (as content-guard's buffered flush sends) replaces it, as chat() reads it
        const content = 'content' in chunk ? chunk.content : undefined
        text = typeof content === 'string' && content !== '' ? content : text + (chunk.delta ?? '')
        if (chunk.delta) onText?.(chunk.delta)
        break
      }
      case 'TOOL_CALL_START': {
        const call = { id: chunk.toolCallId, name: chunk.toolCallName ?? chunk.toolName ?? '', args: '' }
        calls.push(call)
        latest.set(chunk.toolCallId, call)
        break
      }
      case 'TOOL_CALL_ARGS': {
        const call = latest.get(chunk.toolCallId)
        if (call) call.args += chunk.delta ?? ''
        break
      }
      case 'TOOL_CALL_END': {
        const call = latest.get(chunk.toolCallId)
        if (call && chunk.input !== undefined) call.input = chunk.input
        break
      }
      case 'RUN_FINISHED':
        usage = usageOf(chunk) ?? usage
        break
      case 'RUN_ERROR':
        throw new ModelCallError(modelErrorOf(chunk))
      default:
        break // run start, steps, reasoning, state and custom events: nothing a logged model response keeps
    }
  }
}

/** The adapter's chunks; what the adapter throws (not an abort) is a ModelCallError, for the turn's onModelError. */
async function* fromAdapter(signal: AbortSignal, open: () => AsyncIterable<StreamChunk>): AsyncGenerator<StreamChunk> {
  try {
    yield* open()
  } catch (error) {
    if (signal.aborted || error instanceof ModelCallError) throw error
    throw new ModelCallError(modelErrorOf(error))
  }
}

/**
 * RUN_FINISHED usage: TanStack's TokenUsage from an adapter, or AG-UI's `usage[]` (read as TanStack
 * reads it). Kept: the three counts, the cache and reasoning counts and the provider's cost, where reported.
 */
function usageOf(chunk: Extract<StreamChunk, { type: 'RUN_FINISHED' }>): ModelUsage | undefined {
  const usage = Array.isArray(chunk.usage) ? fromSpecTokenUsage(chunk.usage) : chunk.usage
  if (!usage) return undefined
  const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) && n >= 0 ? Math.round(n) : undefined)
  const cachedTokens = count(usage.promptTokensDetails?.cachedTokens)
  const cacheWriteTokens = count(usage.promptTokensDetails?.cacheWriteTokens)
  const reasoningTokens = count(usage.completionTokensDetails?.reasoningTokens)
  const cost = typeof usage.cost === 'number' && Number.isFinite(usage.cost) && usage.cost >= 0 ? usage.cost : undefined
  return {
    promptTokens: count(usage.promptTokens) ?? 0,
    completionTokens: count(usage.completionTokens) ?? 0,
    totalTokens: count(usage.totalTokens) ?? 0,
    ...(cachedTokens !== undefined ? { cachedTokens } : {}),
    ...(cacheWriteTokens !== undefined ? { cacheWriteTokens } : {}),
    ...(reasoningTokens !== undefined ? { reasoningTokens } : {}),
    ...(cost !== undefined ? { cost, costFrom: 'provider' as const } : {}),
  }
}

/** A call whose input is over the size limit keeps only its size: the tool then gets a `value_too_large` error. */
function boundedCall(toolCallId: string, name: string, input: unknown, limit: number): ModelToolCall {
  const size = Buffer.byteLength(JSON.stringify(input ?? {}))
  return size > limit ? { toolCallId, name, input: {}, inputTooLarge: size } : { toolCallId, name, input }
}

function parseArgs(args: string): unknown {
  if (!args.trim()) return {}
  try {
    return JSON.parse(args)
  } catch {
    // the tool's schema check turns this into a tool error the model can read
    return { __unparsedArguments: args }
  }
}
