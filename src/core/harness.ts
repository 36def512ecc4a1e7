import type { AnyServerTool, AnyTextAdapter, ChatMiddleware, ModelMessage, SystemPrompt, ToolCall } from '@tanstack/ai'
import type { BusyMode } from './busy.js'
import type { ToolErrorPayload } from './toolError.js'
import type { ResolvedCompaction } from './compaction.js'
import type { Pricing } from './pricing.js'
import type { ResolvedBudgets } from './budgets.js'

/**
 * What a hook sees after a tool call; its `replaceResult` wins, also on an error (R12). It carries
 * TanStack's `AfterToolCallInfo` fields (`toolCall`, `toolName`, `ok`, `duration`) and our `name`.
 */
export interface AfterToolCallInfo {
  sessionId: string
  toolCallId: string
  /** The tool's name (also `toolName`, as TanStack names it). */
  name: string
  toolName: string
  /** The call as TanStack gives it: our stored toolCallId, the input as JSON text. */
  toolCall: ToolCall
  input: unknown
  /** True when the outcome is a result, false for a tool error. */
  ok: boolean
  /** Milliseconds the attempt that landed took to run the tool (0 for a call that did not run it). */
  duration: number
  result?: unknown
  error?: ToolErrorPayload
}
/** What an `onAfterToolCall` hook returns: nothing (keep the result) or `{ type: 'replaceResult', result }`. */
export type AfterToolCallDecision = void | undefined | { type: 'replaceResult'; result: unknown }

/** A hook run after each tool call, before its result is kept (R12). */
export type AfterToolCallHook = (info: AfterToolCallInfo) => AfterToolCallDecision | Promise<AfterToolCallDecision>

/** A failed model call as the policy sees it: the provider's message and code, and its retry-after when the adapter passed one. */
export interface ModelError {
  message: string
  code?: string
  retryAfterMs?: number
}

/** What `turn.onModelError` gets: the error and how many retries this model call had (durable: from the log). */
export interface ModelErrorContext {
  sessionId: string
  inputId: string
  error: ModelError
  /** Retries since the turn's last model response (or its last resume). */
  retries: number
  /** True when the call that failed was a compaction's summary call (docs/compaction.md). */
  compaction?: boolean
}

/** Retry after `delayMs` (a long wait parks the turn, holding no worker slot), pause the turn, or fail it. */
export type ModelErrorDecision = { action: 'retry'; delayMs: number } | { action: 'pause' } | { action: 'fail' }

/** `turn.onModelError`: decides what a failed model call does; `undefined` fails the turn. */
export type ModelErrorPolicy = (ctx: ModelErrorContext) => ModelErrorDecision | undefined | Promise<ModelErrorDecision | undefined>

/** What `turn.beforeFinish` gets: the conversation the model saw, and how many cycles it continued the turn so far. */
export interface FinishContext {
  sessionId: string
  inputId: string
  cycle: number
  messages: ReadonlyArray<ModelMessage>
}

/** Messages that send the model back to work: `messages` are logged, `ephemeral` reach only the next model call. */
export interface FinishAdditions {
  messages?: ReadonlyArray<FinishMessage>
  ephemeral?: ReadonlyArray<FinishMessage>
}

/** A message `beforeFinish` adds: a user or assistant turn of plain text. */
export interface FinishMessage {
  role: 'user' | 'assistant'
  content: string
}

/** `turn.beforeFinish`: runs when the model answers without tool calls; messages it returns send the model back to work. */
export type BeforeFinishHook = (ctx: FinishContext) => FinishAdditions | undefined | Promise<FinishAdditions | undefined>

/** How a turn handles a failed model call and a model that stops (docs/harness.md, "Turn options"). */
export interface TurnOptions {
  onModelError: ModelErrorPolicy
  beforeFinish?: BeforeFinishHook
  /** How many times `beforeFinish` may continue one turn; a hook that still adds messages at the limit fails the turn. */
  maxFinishCycles: number
}

/** How a harness survives crashes and slow parts: attempts, time limits, lock and stall settings, size limits (docs/recovery.md). */
export interface DurabilityOptions {
  /**
   * Runs of a turn job that may fail or crash (a lost worker, a Redis error); then `attempts_exhausted`.
   * A failed model call is not one of them: `turn.onModelError` decides it.
   */
  maxAttempts: number
  /** Wall-clock bound of a turn from its input; then `timeout`. */
  timeoutMs?: number
  /** The tool error a cut `replay: 'never'` call gets (R10). */
  interruptedToolResult: string
  /** BullMQ job lock; a dead worker's job is picked up again after about lockMs + stalledMs. */
  lockMs: number
  stalledMs: number
  /** Size limit of a step value, append record, ask answer, prompt, tool input or result as JSON (R4). */
  maxValueBytes: number
  /** Model calls one turn may make before it settles as `failed` with `max_model_calls`. */
  maxModelCalls: number
  /**
   * Time limit of one attempt of a tool call (a park ends an attempt; waiting parked does not count).
   * Past it the call lands a `timeout` tool error, its abortSignal fires and its worker slot is free;
   * a tool's own `timeoutMs` (durableTool option, or withTimeout) wins.
   */
  toolTimeoutMs: number
  /** How long a `needsApproval` call waits for a person; then it lands `approval_expired`. Default: no limit. */
  approvalTimeoutMs?: number
}

/**
 * A flow-control limit across every worker process and shard (R17, docs/limits.md): at most
 * `concurrency` running at once, at most `rate.limit` starts per `rate.per`; with `key`, the limit
 * holds per key (a tenant, a user, a provider host), each key with its own FIFO line.
 */
export interface Limit {
  concurrency?: number
  rate?: { limit: number; per: number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}` }
  /** The key a call counts under: its input as the log holds it, its session and its turn's context. */
  key?: (input: unknown, ctx: { sessionId: string; context?: unknown }) => string
}

/** `defineHarness({ limits })`: a limit per tool name, and one for the harness's turns. */
export interface HarnessLimits {
  tools?: Record<string, Limit>
  turns?: Limit
}

/**
 * `defineHarness({ subagents: { limits } })`: the limits of a fan-out tree (docs/fan-out.md), held in
 * Redis across every worker and crash (R24): how deep a child may be, how many children run at once,
 * how many a tree starts in all, and how long after its first child a tree may start more.
 */
export interface SubagentLimits {
  /** Default 2: a root call's children are at depth 1, theirs at 2; a start deeper fails (`tree_limit`). */
  maxDepth?: number
  /** Default 8: a child started past it waits (parked, no worker slot) for a running one to end. */
  maxConcurrent?: number
  /** Default 100: the children of one tree in all, counted once each; a start past it fails (`tree_limit`). */
  maxCalls?: number
  /** Default 1 hour: a start this long after the tree's first child fails (`tree_limit`). */
  timeoutMs?: number
}

/** A limit as defineHarness checked it: numbers, 0 for a bound it does not set. */
export interface ResolvedLimit {
  /** `tool:<name>` or `turns`: names the limit's keys and its line in the stats. */
  scope: string
  concurrency: number
  rateLimit: number
  perMs: number
  key?: Limit['key']
}

/** Where a harness keeps its tools by name; not part of the public API. A `Symbol.for` key, so a harness of another copy of the package is still one. */
export const TOOLS_BY_NAME: unique symbol = Symbol.for('durable-harness.toolsByName')

/** Where a harness keeps its retired tools by name (`legacyTools`); not part of the public API. */
export const LEGACY_TOOLS: unique symbol = Symbol.for('durable-harness.legacyTools')

/** A harness as `defineHarness` makes it and every layer runs it. */
export interface Harness {
  readonly name: string
  /** The version every call and question it begins records (docs/deploys.md). */
  readonly version: string
  readonly adapter: AnyTextAdapter
  readonly tools: ReadonlyArray<AnyServerTool>
  readonly systemPrompts?: ReadonlyArray<SystemPrompt>
  /** Session secrets, resolved in the worker for each call; never stored in Redis. */
  readonly secrets?: (session: { sessionId: string; harness: string }) => Record<string, string> | Promise<Record<string, string>>
  readonly hooks: {
    /** Run in order; each sees the result as the previous hooks left it. */
    onAfterToolCall: ReadonlyArray<AfterToolCallHook>
  }
  /** `@tanstack/ai` ChatMiddleware, run around model calls (turn worker) and tool calls (tool worker), in order. */
  readonly middleware: ReadonlyArray<ChatMiddleware>
  readonly durability: DurabilityOptions
  readonly turn: TurnOptions
  /**
   * One turn of a session runs at a time. A prompt to a busy session (a turn running or waiting on
   * a parked call): 'queue' waits in line and runs after the turns before it, in log order; 'steer'
   * joins the running turn (its next model call sees it, and it settles with that turn); 'reject'
   * throws SessionBusyError and writes nothing.
   */
  readonly busy: BusyMode
  /**
   * The calls of one model response: 'parallel' (default) all at once; 'sequential' one after
   * another in call order, each landed before the next begins (across workers and crashes).
   */
  readonly toolExecution: 'parallel' | 'sequential'
  /** Machine events that abort a matching open turn (and its parked calls) when they arrive (`host.sendEvent`). */
  readonly cancelOn: ReadonlyArray<CancelOn>
  /** Flow-control limits (R17): per tool name, and the turns'. Absent: nothing is limited. */
  readonly limits?: { readonly tools: ReadonlyMap<string, ResolvedLimit>; readonly turns?: ResolvedLimit }
  /** The fan-out tree's limits (docs/fan-out.md), defaults filled in; absent on a harness made by hand: the defaults. */
  readonly subagents?: Readonly<Required<SubagentLimits>>
  /** The BullMQ priority of its turns (and their calls) when a prompt gives none: 1 runs first. */
  readonly priority?: number
  /** The token budget of the model's view and how it is compacted (docs/compaction.md). Absent: never compacted. */
  readonly compaction?: ResolvedCompaction
  /** Prices by model, for the calls whose provider reports no cost (docs/spend.md). */
  readonly pricing?: Pricing
  /** Spend ceilings checked before each model call (docs/spend.md, "Budgets"). Absent: none. */
  readonly budgets?: ResolvedBudgets
  readonly [TOOLS_BY_NAME]: ReadonlyMap<string, AnyServerTool>
  readonly [LEGACY_TOOLS]: ReadonlyMap<string, AnyServerTool>
}

/** A `cancelOn` entry of defineHarness: the event, and the correlation key of a turn from its input text and context. */
export interface CancelOn {
  event: string
  key: (input: string, context: unknown) => string
}

/** The harness's tool of this name, if it has one. */
export function toolOf(harness: Harness, name: string): AnyServerTool | undefined {
  return harness[TOOLS_BY_NAME].get(name)
}

/**
 * The tool that runs a call of this name that began under `version`: the harness's own, or a
 * retired one (`legacyTools`) for a call that began under another version (never a new call).
 */
export function toolOfCall(harness: Harness, name: string, version: string | undefined): AnyServerTool | undefined {
  return toolOf(harness, name) ?? (version !== undefined && version !== harness.version ? harness[LEGACY_TOOLS]?.get(name) : undefined)
}

export function toolNames(harness: Harness): string[] {
  return [...harness[TOOLS_BY_NAME].keys()]
}

/** The fan-out tree's limits when `defineHarness({ subagents })` gives none (docs/fan-out.md). */
export const DEFAULT_SUBAGENT_LIMITS: Readonly<Required<SubagentLimits>> = Object.freeze({
  maxDepth: 2,
  maxConcurrent: 8,
  maxCalls: 100,
  timeoutMs: 3_600_000,
})
