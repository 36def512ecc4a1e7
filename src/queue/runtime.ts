import type { AnyServerTool, AnyTextAdapter, SystemPrompt } from '@tanstack/ai'
import type { ToolErrorPayload } from '../log/index.js'

/** What a hook sees after a tool call; its `replaceResult` wins, also on an error (R12). */
export interface AfterToolCallInfo {
  sessionId: string
  toolCallId: string
  name: string
  input: unknown
  result?: unknown
  error?: ToolErrorPayload
}
export type AfterToolCallDecision = void | undefined | { type: 'replaceResult'; result: unknown }

export type AfterToolCallHook = (info: AfterToolCallInfo) => AfterToolCallDecision | Promise<AfterToolCallDecision>

export interface DurabilityOptions {
  /** Attempts of a turn (model call failures are retried with backoff); then `attempts_exhausted`. */
  maxAttempts: number
  /** Wall-clock bound of a turn from its input; then `timeout`. */
  timeoutMs?: number
  /** The tool error a cut `replay: 'never'` call gets (R10). */
  interruptedToolResult: string
  /** BullMQ job lock; a dead worker's job is picked up again after about lockMs + stalledMs. */
  lockMs: number
  stalledMs: number
  /** Size limit of a step value, append record or ask answer as JSON (R4). */
  maxValueBytes: number
  /** Model calls one turn may make before it settles as `failed` with `max_model_calls`. */
  maxModelCalls: number
  /**
   * Time limit of one attempt of a tool call (a park ends an attempt; waiting parked does not count).
   * Past it the call lands a `timeout` tool error, its abortSignal fires and its worker slot is free;
   * a tool's own `timeoutMs` (durableTool option, or withTimeout) wins.
   */
  toolTimeoutMs: number
}

/** The harness as the queue layer runs it (built by defineHarness). */
export interface RuntimeHarness {
  readonly name: string
  readonly adapter: AnyTextAdapter
  readonly tools: ReadonlyArray<AnyServerTool>
  readonly toolsByName: ReadonlyMap<string, AnyServerTool>
  readonly systemPrompts?: ReadonlyArray<SystemPrompt>
  readonly secrets?: (session: { sessionId: string; harness: string }) => Record<string, string> | Promise<Record<string, string>>
  readonly hooks: {
    /** Run in order; each sees the result as the previous hooks left it. */
    onAfterToolCall: ReadonlyArray<AfterToolCallHook>
  }
  readonly durability: DurabilityOptions
}
