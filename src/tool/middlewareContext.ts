import type { ChatMiddleware, ChatMiddlewareContext, ChatMiddlewarePhase, ModelMessage } from '@tanstack/ai'
import { toolNames, type Harness } from '../core/index.js'
import { randomBytes } from 'node:crypto'

type Registry = ChatMiddlewareContext['capabilities']
type Handle = Parameters<Registry['has']>[0]

/**
 * TanStack's CapabilityRegistry (not exported by @tanstack/ai): which capability handles were provided. The
 * class has private fields, so no object of ours is one by its type: the one cast says so.
 */
function capabilityRegistry(): Registry {
  const provided = new Set<Handle>()
  let onDuplicate: ((name: string) => void) | undefined
  return {
    setOnDuplicate: (cb: (name: string) => void) => (onDuplicate = cb),
    markProvided(handle: Handle) {
      if (provided.has(handle)) onDuplicate?.(handle.capabilityName)
      provided.add(handle)
    },
    has: (handle: Handle) => provided.has(handle),
  } as never
}

export interface MiddlewareContextFields {
  sessionId: string
  /** The turn's input (runId); a `runTool` call has none. */
  inputId?: string
  phase: ChatMiddlewarePhase
  /** The model call of the turn (0-based) this context belongs to, or the one whose batch a tool call is in. */
  iteration: number
  messages: ReadonlyArray<ModelMessage>
  signal?: AbortSignal
  /** `ctx.abort(reason)`: what aborting means where the hook runs. */
  abort(reason?: string): void
  emitCustomEvent: ChatMiddlewareContext['emitCustomEvent']
  /** The turn input's context (`prompt(text, { context })`). */
  context?: unknown
}

export interface MiddlewareRun {
  ctx: ChatMiddlewareContext
  /** Runs `setup` of every middleware in order (chat() runs it first, before onConfig). */
  setup(): Promise<void>
  /** Awaits the promises hooks passed to `ctx.defer` (chat() awaits them after the terminal hook). */
  drain(): Promise<void>
}

/**
 * A ChatMiddlewareContext for one durable step (a model call, a tool call, a settle). chat() keeps one
 * context for a whole run in one process; a durable turn runs in many processes, so each step has its
 * own: capabilities provided in `setup` and state kept on the context live for that step only.
 */
export function middlewareRun(
  harness: Harness,
  fields: MiddlewareContextFields,
  middleware: ReadonlyArray<ChatMiddleware> = harness.middleware,
): MiddlewareRun {
  const deferred: Promise<unknown>[] = []
  const tools = toolNames(harness)
  const runId = fields.inputId ?? `tool-${fields.sessionId}`
  const ctx: ChatMiddlewareContext = {
    requestId: runId,
    streamId: `${runId}.${fields.iteration}`,
    runId,
    threadId: fields.sessionId,
    conversationId: fields.sessionId,
    phase: fields.phase,
    iteration: fields.iteration,
    chunkIndex: 0,
    ...(fields.signal ? { signal: fields.signal } : {}),
    abort: (reason) => fields.abort(reason),
    emitCustomEvent: fields.emitCustomEvent,
    context: fields.context,
    defer: (promise) => void deferred.push(promise),
    activity: 'chat',
    provider: harness.adapter.name,
    model: harness.adapter.model,
    source: 'server',
    streaming: true,
    systemPrompts: [...(harness.systemPrompts ?? [])],
    toolNames: tools,
    messageCount: fields.messages.length,
    hasTools: tools.length > 0,
    currentMessageId: null,
    accumulatedContent: '',
    messages: fields.messages,
    createId: (prefix) => `${prefix}-${Date.now()}-${randomBytes(4).toString('hex')}`,
    capabilities: capabilityRegistry(),
    get: (capability) => capability[0](ctx),
    getOptional: (capability) => capability[0](ctx, { optional: true }),
    provide: (capability, value) => capability[1](ctx, value),
  }
  return {
    ctx,
    async setup() {
      for (const mw of middleware) await mw.setup?.(ctx)
      for (const mw of middleware)
        for (const handle of mw.provides ?? [])
          if (!ctx.capabilities.has(handle))
            throw new Error(
              `Middleware "${mw.name ?? 'unnamed'}" declares it provides "${handle.capabilityName}" but never called provide() in setup().`,
            )
    },
    async drain() {
      await Promise.allSettled(deferred.splice(0))
    },
  }
}
