import type { AnyServerTool, AnyTextAdapter, ChatMiddleware, SystemPrompt } from '@tanstack/ai'
import { ConfigError } from '../errors/index.js'
import {
  LEGACY_TOOLS,
  TOOLS_BY_NAME,
  pricingProblem,
  resolveBudgets,
  type Budgets,
  type Pricing,
  type AfterToolCallHook,
  type BeforeFinishHook,
  type DurabilityOptions,
  type Harness,
  type HarnessLimits,
  type SubagentLimits,
  type ModelErrorPolicy,
  type CompactionOptions,
} from '../core/index.js'
import { retryTransientErrors } from '../turn/modelErrors.js'
import { DEFAULT_MAX_VALUE_BYTES, MAX_TIMER_MS, parseDuration } from '../tool/index.js'
import { defaultVersion } from './version.js'
import { checkPriority, resolveLimits, resolveSubagents } from './limitOptions.js'
import { resolveCompaction } from '../compaction/index.js'

/** The durability options a harness gets where `defineHarness({ durability })` says nothing (docs/harness.md). */
export const DEFAULT_DURABILITY: DurabilityOptions = {
  maxAttempts: 10,
  interruptedToolResult: 'The tool call was interrupted by a crash: it may or may not have run. Check before you retry it.',
  // a dead worker's job runs again after about lockMs + stalledMs (≤ 15 s); a live one renews every lockMs / 2
  lockMs: 8_000,
  stalledMs: 5_000,
  maxValueBytes: DEFAULT_MAX_VALUE_BYTES,
  maxModelCalls: 25,
  toolTimeoutMs: 15 * 60_000,
}

/** A turn's model errors by default: transient ones retry (8 times from 1 s, at most 60 s apart), permanent ones fail. */
const DEFAULT_MODEL_ERROR_POLICY = retryTransientErrors()

/** Options of `defineHarness`: name, model adapter, tools, prompts, hooks, middleware, secrets and durability. */
export interface HarnessOptions {
  /** Names the harness in queue names and logs: [A-Za-z0-9._/-]{1,100}. */
  name: string
  adapter: AnyTextAdapter
  tools?: ReadonlyArray<AnyServerTool>
  systemPrompts?: ReadonlyArray<SystemPrompt>
  /** Session secrets, resolved in the worker for each call; never stored in Redis. */
  secrets?: Harness['secrets']
  hooks?: { onAfterToolCall?: AfterToolCallHook | ReadonlyArray<AfterToolCallHook> }
  /**
   * `@tanstack/ai` ChatMiddleware, run as `chat()` runs it, with durable semantics (docs/harness.md):
   * model-call hooks in the turn worker for each model call made, tool hooks in the worker of the
   * attempt that runs the tool; a wrapper of a tool's `execute` that `onConfig` returns is bound
   * there too, around the durable tool (docs/decisions/wrapped-execute.md).
   */
  middleware?: ReadonlyArray<ChatMiddleware>
  durability?: Partial<DurabilityOptions>
  /**
   * A failed model call: `onModelError` decides (default `retryTransientErrors()`); a model that
   * stops: `beforeFinish` may send it back to work, at most `maxFinishCycles` (default 32) times a turn.
   */
  turn?: { onModelError?: ModelErrorPolicy; beforeFinish?: BeforeFinishHook; maxFinishCycles?: number }
  /** What a prompt to a busy session does: 'queue' (default), 'steer' or 'reject' (docs/harness.md). */
  busy?: Harness['busy']
  /** 'parallel' (default) or 'sequential': the calls of one model response one after another (docs/harness.md). */
  toolExecution?: Harness['toolExecution']
  /**
   * Names this code in every call and question it begins (docs/deploys.md). Default: a hash of the
   * tools' names and schemas, so a deploy that changes them gets a new version by itself.
   */
  version?: string
  /**
   * Retired tools, kept runnable for the calls that began under an older version (a call parked for
   * days); a new model response that names one gets `unknown_tool`, as for any tool not in `tools`.
   */
  legacyTools?: ReadonlyArray<AnyServerTool>
  /** Abort a turn (and its parked calls) when this event with the turn's key arrives (`host.sendEvent`; docs/events-and-schedules.md). */
  cancelOn?: Harness['cancelOn']
  /**
   * Flow control across every worker and shard (R17, docs/limits.md): `tools[name]` limits the
   * calls of a tool, `turns` the turns; each `{ concurrency?, rate?: { limit, per }, key? }`.
   */
  limits?: HarnessLimits
  /**
   * The limits of a fan-out tree (`ctx.tools`, `ctx.agents`, agent tools; docs/fan-out.md):
   * `{ maxDepth: 2, maxConcurrent: 8, maxCalls: 100, timeoutMs: 3_600_000 }` unless given.
   */
  subagents?: { limits?: SubagentLimits }
  /** The priority of a turn (and its calls) whose prompt gives none: 1 (runs first) to 2^21, BullMQ's scale. */
  priority?: number
  /**
   * A token budget for the model's view, kept by compaction records in the log (docs/compaction.md):
   * `{ maxTokens, contextWindow?, countTokens?, strategy?, background? }`. Also heals a context overflow.
   */
  compaction?: CompactionOptions
  /** USD per million tokens by model, for calls whose provider reports no cost: `{ [model]: { inputPerMTok, outputPerMTok, cachedInputPerMTok? } }` (docs/spend.md). */
  pricing?: Pricing
  /**
   * Spend ceilings per session, per fan-out tree and per principal per period, checked before each
   * model call by reserving its estimate across every worker (docs/spend.md, "Budgets").
   */
  budgets?: Budgets
}

export type { Harness }

const NAME = /^[A-Za-z0-9._/-]{1,100}$/
/** A version is printed and kept in call states: a short id, a semver or a commit hash. */
const VERSION = /^[A-Za-z0-9._+-]{1,64}$/

/** The retired tools by name: each with a server execute, none also in `tools` (it would never be the one that runs). */
function checkedLegacyTools(harness: string, legacy: ReadonlyArray<AnyServerTool>, current: ReadonlyMap<string, AnyServerTool>) {
  const byName = new Map<string, AnyServerTool>()
  for (const tool of legacy) {
    if (typeof tool?.execute !== 'function')
      throw new ConfigError(`defineHarness "${harness}": legacy tool "${tool?.name}" has no server execute.`)
    if (current.has(tool.name) || byName.has(tool.name))
      throw new ConfigError(`defineHarness "${harness}": "${tool.name}" is named twice in tools and legacyTools; keep one.`)
    byName.set(tool.name, tool)
  }
  return byName
}

/**
 * ChatMiddleware members a durable turn never calls: refused, never silently ignored. (The loop's
 * continue decision and tool-phase hooks would need the turn's batch state across processes; the
 * interrupt hooks, chat()'s ephemeral interrupts; structured output and sandboxes are not supported.)
 */
const UNSUPPORTED_MIDDLEWARE = [
  'onShouldContinue',
  'onToolPhaseComplete',
  'onInterruptBoundary',
  'onInterruptResolution',
  'onStructuredOutputConfig',
  'sandbox',
] as const

/**
 * Names an agent: its model adapter, its tools, hooks and durability options. A harness module
 * exports it, so that `harness worker <module>` and every host find the same harness.
 *
 * @example
 * ```ts
 * import { openaiText } from '@tanstack/ai-openai'
 * import { defineHarness } from 'durable-harness'
 *
 * export const assistant = defineHarness({
 *   name: 'acme/assistant',
 *   adapter: openaiText('gpt-4o-mini'), // or scriptedModel([...]) from durable-harness/testing
 *   tools: [checkout],
 *   durability: { toolTimeoutMs: 60_000 },
 * })
 * ```
 */
export function defineHarness(options: HarnessOptions): Harness {
  if (!NAME.test(options.name ?? '')) throw new ConfigError(`defineHarness: name ${JSON.stringify(options.name)} must match ${NAME}.`)
  if (options.adapter?.kind !== 'text')
    throw new ConfigError(`defineHarness "${options.name}": adapter must be a @tanstack/ai text adapter (kind 'text').`)
  const tools = options.tools ?? []
  const toolsByName = new Map<string, AnyServerTool>()
  for (const tool of tools) {
    if (typeof tool.execute !== 'function')
      throw new ConfigError(
        `defineHarness "${options.name}": tool "${tool.name}" has no server execute; use toolDefinition(...).server(fn) or durableTool(...).`,
      )
    if (toolsByName.has(tool.name)) throw new ConfigError(`defineHarness "${options.name}": two tools are named "${tool.name}".`)
    // TanStack tool options we do not support are refused, never ignored
    const unsupported = (['lazy', 'approvalSchema'] as const).filter(
      (key) => Reflect.get(tool, key) !== undefined && Reflect.get(tool, key) !== false,
    )
    if (unsupported.length > 0)
      throw new ConfigError(
        `defineHarness "${options.name}": tool "${tool.name}" sets ${unsupported.join(' and ')}, which a durable harness does not support yet. ` +
          `Remove it (needsApproval: true is supported: the call waits for { approved, reason? }).`,
      )
    toolsByName.set(tool.name, tool)
  }
  const legacyTools = checkedLegacyTools(options.name, options.legacyTools ?? [], toolsByName)
  const version = options.version ?? defaultVersion(tools)
  if (typeof version !== 'string' || !VERSION.test(version))
    throw new ConfigError(`defineHarness "${options.name}": version ${JSON.stringify(version)} must match ${VERSION}.`)
  const durability = { ...DEFAULT_DURABILITY, ...options.durability }
  for (const key of ['maxAttempts', 'lockMs', 'stalledMs', 'maxValueBytes', 'maxModelCalls', 'toolTimeoutMs'] as const) {
    if (!Number.isInteger(durability[key]) || durability[key] <= 0)
      throw new ConfigError(`defineHarness "${options.name}": durability.${key} must be a positive integer.`)
  }
  if (durability.toolTimeoutMs > MAX_TIMER_MS)
    throw new ConfigError(`defineHarness "${options.name}": durability.toolTimeoutMs must be at most ${MAX_TIMER_MS} ms (about 24 days).`)
  if (durability.approvalTimeoutMs !== undefined && !(Number.isInteger(durability.approvalTimeoutMs) && durability.approvalTimeoutMs > 0))
    throw new ConfigError(`defineHarness "${options.name}": durability.approvalTimeoutMs must be a positive integer (ms).`)
  if (durability.timeoutMs !== undefined && !(durability.timeoutMs > 0))
    throw new ConfigError(`defineHarness "${options.name}": durability.timeoutMs must be positive.`)
  const busy = options.busy ?? 'queue'
  if (!['queue', 'steer', 'reject'].includes(busy))
    throw new ConfigError(`defineHarness "${options.name}": busy must be 'queue', 'steer' or 'reject', got ${JSON.stringify(busy)}.`)
  const toolExecution = options.toolExecution ?? 'parallel'
  if (toolExecution !== 'parallel' && toolExecution !== 'sequential')
    throw new ConfigError(
      `defineHarness "${options.name}": toolExecution must be 'parallel' or 'sequential', got ${JSON.stringify(toolExecution)}.`,
    )
  const cancelOn = options.cancelOn ?? []
  if (!Array.isArray(cancelOn) || cancelOn.some((c) => typeof c?.event !== 'string' || !c.event || typeof c.key !== 'function'))
    throw new ConfigError(
      `defineHarness "${options.name}": cancelOn must be an array of { event: string, key: (input, context) => string }.`,
    )
  const hook = options.hooks?.onAfterToolCall
  const turn = options.turn ?? {}
  for (const key of ['onModelError', 'beforeFinish'] as const)
    if (turn[key] !== undefined && typeof turn[key] !== 'function')
      throw new ConfigError(
        `defineHarness "${options.name}": turn.${key} must be a function (for onModelError, e.g. retryTransientErrors()).`,
      )
  const maxFinishCycles = turn.maxFinishCycles ?? 32
  if (!Number.isInteger(maxFinishCycles) || maxFinishCycles < 0)
    throw new ConfigError(`defineHarness "${options.name}": turn.maxFinishCycles must be an integer ≥ 0.`)
  const middleware = options.middleware ?? []
  if (!Array.isArray(middleware) || middleware.some((m) => !m || typeof m !== 'object'))
    throw new ConfigError(`defineHarness "${options.name}": middleware must be an array of @tanstack/ai ChatMiddleware objects.`)
  for (const mw of middleware) {
    const unsupported = UNSUPPORTED_MIDDLEWARE.filter((key) => Reflect.get(mw, key) !== undefined)
    if (unsupported.length > 0)
      throw new ConfigError(
        `defineHarness "${options.name}": middleware "${mw.name ?? 'unnamed'}" uses ${unsupported.join(', ')}, which a durable turn does not run yet. ` +
          'Remove it, or move its work to a hook that runs (see "Middleware" in docs/harness.md).',
      )
  }
  const limits = resolveLimits(options.name, options.limits, new Set(toolsByName.keys()))
  const subagents = resolveSubagents(options.name, options.subagents)
  const priority = options.priority === undefined ? undefined : checkPriority(options.priority, `defineHarness "${options.name}"`)
  const compaction = resolveCompaction(options.name, options.compaction, parseDuration)
  const badPricing = pricingProblem(options.pricing)
  if (badPricing) throw new ConfigError(`defineHarness "${options.name}": ${badPricing}.`)
  const budgets = resolveBudgets(options.budgets, parseDuration)
  if (typeof budgets === 'string') throw new ConfigError(`defineHarness "${options.name}": ${budgets}.`)
  return {
    name: options.name,
    adapter: options.adapter,
    tools,
    [TOOLS_BY_NAME]: toolsByName,
    version,
    [LEGACY_TOOLS]: legacyTools,
    ...(options.systemPrompts ? { systemPrompts: options.systemPrompts } : {}),
    ...(options.secrets ? { secrets: options.secrets } : {}),
    hooks: { onAfterToolCall: hook === undefined ? [] : typeof hook === 'function' ? [hook] : [...hook] },
    middleware: [...middleware],
    durability,
    turn: {
      onModelError: turn.onModelError ?? DEFAULT_MODEL_ERROR_POLICY,
      ...(turn.beforeFinish ? { beforeFinish: turn.beforeFinish } : {}),
      maxFinishCycles,
    },
    busy,
    toolExecution,
    cancelOn: [...cancelOn],
    ...(limits ? { limits } : {}),
    subagents,
    ...(priority !== undefined ? { priority } : {}),
    ...(compaction ? { compaction } : {}),
    ...(options.pricing ? { pricing: { ...options.pricing } } : {}),
    ...(budgets ? { budgets } : {}),
  }
}
