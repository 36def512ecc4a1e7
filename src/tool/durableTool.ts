import { randomUUID } from 'node:crypto'
import type { AnyServerTool, ApprovalSchemaConfig, SchemaInput, ServerTool, ToolDefinition, ToolExecutionContext } from '@tanstack/ai'
import type { InferSchemaType } from '@tanstack/ai'
import { ConfigError } from '../errors/index.js'
import type { DurableToolContext, Replay } from './context.js'
import { createPlainContext } from './plainContext.js'
import { checkRetryPolicy, type RetryPolicy } from './retry.js'

/** Where a durable tool keeps its durable execute and replay option, next to the plain server tool. */
export const DURABLE = Symbol.for('durable-harness.durableTool')

/** A durable tool's execute: the tool's input and a `DurableToolContext` (`step`, `append`, `secrets`); returns the result. */
export type DurableExecute<TInput extends SchemaInput | undefined, TOutput extends SchemaInput | undefined, TContext = unknown> = (
  args: InferSchemaType<TInput>,
  context: DurableToolContext<TContext>,
) => Promise<InferSchemaType<TOutput>> | InferSchemaType<TOutput>

/** Options of `durableTool`: replay on a crash, a time limit, a result schema. */
export interface DurableToolOptions {
  /** 'safe' (default): a call cut by a crash runs again. 'never': it gets a tool error instead. */
  replay?: Replay
  /** Time limit of one attempt of a call of this tool; default the harness's durability.toolTimeoutMs. */
  timeoutMs?: number
  /** The retry policy of every step.do of the tool that names none of its own (R16). */
  retry?: RetryPolicy
}

export interface DurableToolMarker {
  readonly [DURABLE]: {
    execute: (args: unknown, context: DurableToolContext) => unknown
    replay: Replay
    timeoutMs?: number
    retry?: RetryPolicy
  }
}

/** The tool `durableTool` returns: a `@tanstack/ai` server tool (usable in plain `chat()` too) that a harness runs durably. */
export type DurableServerTool<
  TInput extends SchemaInput | undefined,
  TOutput extends SchemaInput | undefined,
  TName extends string,
  TNeedsApproval extends boolean,
  TApprovalSchema extends ApprovalSchemaConfig | undefined,
> = ServerTool<TInput, TOutput, TName, unknown, TNeedsApproval, TApprovalSchema> & DurableToolMarker & { readonly replay: Replay }

/**
 * Makes a `@tanstack/ai` server tool whose execute gets `step`, `append` and `secrets`. In a durable
 * session the harness runs the durable execute against the session log; in plain `chat()` the same
 * tool runs with the plain step context (R13). The returned tool carries `replay` ('safe' unless the
 * option says 'never'); a `replay` on the definition is not read (R10).
 *
 * @example
 * ```ts
 * import { toolDefinition } from '@tanstack/ai'
 * import { durableTool } from 'durable-harness'
 * import { z } from 'zod'
 *
 * export const checkout = durableTool(
 *   toolDefinition({ name: 'checkout', description: 'Charge an order', inputSchema: z.object({ orderId: z.string() }) }),
 *   async ({ orderId }, { step }) => {
 *     // runs once per tool call; after a crash the stored value comes back instead
 *     const payment = await step.do(`charge:${orderId}`, ({ idempotencyKey }) => billing.charge(orderId, idempotencyKey))
 *     return { chargeId: payment.id }
 *   },
 * )
 * ```
 */
export function durableTool<
  TInput extends SchemaInput | undefined,
  TOutput extends SchemaInput | undefined,
  TName extends string,
  TNeedsApproval extends boolean,
  TApprovalSchema extends ApprovalSchemaConfig | undefined,
>(
  definition: ToolDefinition<TInput, TOutput, TName, TNeedsApproval, TApprovalSchema>,
  execute: DurableExecute<TInput, TOutput>,
  options: DurableToolOptions = {},
): DurableServerTool<TInput, TOutput, TName, TNeedsApproval, TApprovalSchema> {
  const replay = options.replay ?? 'safe'
  if (replay !== 'safe' && replay !== 'never') {
    throw new ConfigError(`durableTool "${definition.name}": replay must be 'safe' or 'never', got ${JSON.stringify(replay)}.`)
  }
  assertTimeout(options.timeoutMs, `durableTool "${definition.name}"`)
  checkRetryPolicy(options.retry, `durableTool "${definition.name}"`)
  const plain = definition.server(async (args, context?: ToolExecutionContext) => {
    const toolCallId = context?.toolCallId ?? randomUUID()
    return execute(args, { ...context, toolCallId, ...createPlainContext(toolCallId, context?.abortSignal, options.retry) })
  })
  // R10: a replay on the definition is not read; the tool carries the option's (the page: replay: 'safe' | 'never')
  const { replay: _ignored, ...rest } = plain as typeof plain & { replay?: unknown }
  return Object.assign(rest, {
    replay,
    [DURABLE]: {
      execute: execute as DurableToolMarker[typeof DURABLE]['execute'],
      replay,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.retry !== undefined ? { retry: options.retry } : {}),
    },
  }) as DurableServerTool<TInput, TOutput, TName, TNeedsApproval, TApprovalSchema>
}

export function isDurableTool(tool: unknown): tool is AnyServerTool & DurableToolMarker {
  return typeof tool === 'object' && tool !== null && DURABLE in tool
}

/**
 * Marks a plain (non-durable) server tool as safe to run again after a crash. `@tanstack/ai`'s
 * toolDefinition has no `replay` field, so this is the typed way to set it (R10).
 */
export function withReplay<T extends AnyServerTool>(tool: T, replay: Replay): T & { replay: Replay } {
  return Object.assign(tool, { replay })
}

/** Sets the time limit of one attempt of a plain (non-durable) tool's call, over the harness default. */
export function withTimeout<T extends AnyServerTool>(tool: T, timeoutMs: number): T & { timeoutMs: number } {
  assertTimeout(timeoutMs, `withTimeout("${tool.name}")`)
  return Object.assign(tool, { timeoutMs })
}

/** The tool's own time limit, if it has one (durableTool option or withTimeout). */
export function timeoutOf(tool: unknown): number | undefined {
  if (isDurableTool(tool)) return tool[DURABLE].timeoutMs
  const own = typeof tool === 'object' && tool !== null && 'timeoutMs' in tool ? tool.timeoutMs : undefined
  return typeof own === 'number' ? own : undefined
}

/** Node's timers hold at most this; a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1

function assertTimeout(timeoutMs: unknown, where: string): void {
  if (
    timeoutMs !== undefined &&
    !(typeof timeoutMs === 'number' && Number.isInteger(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS)
  ) {
    throw new ConfigError(
      `${where}: timeoutMs must be a whole number of ms from 1 to ${MAX_TIMER_MS} (about 24 days), got ${JSON.stringify(timeoutMs)}.`,
    )
  }
}

/** The replay option the harness obeys: the durableTool option, else a plain tool's own `replay: 'safe'`. */
export function replayOf(tool: unknown): Replay {
  if (isDurableTool(tool)) return tool[DURABLE].replay
  return typeof tool === 'object' && tool !== null && 'replay' in tool && tool.replay === 'safe' ? 'safe' : 'never'
}
