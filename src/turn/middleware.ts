import {
  fromSpecTokenUsage,
  type ChatMiddleware,
  type ChatMiddlewareConfig,
  type ModelMessage,
  type StreamChunk,
  type TokenUsage,
} from '@tanstack/ai'
import { MiddlewareToolError } from '../errors/index.js'
import { isAgentTool, toolNames, toolOf, type Harness } from '../core/index.js'
import { contextOf, isRecord, type LogEntry, type ModelUsage, type RecordOf, type SessionLog } from '../log/index.js'
import { customEvents, middlewareRun, resolveSecrets } from '../tool/index.js'

/** Raised when a model-call hook called `ctx.abort(reason)`: the turn settles as aborted. */
export class MiddlewareAbort extends Error {
  constructor(readonly reason: string) {
    super(reason)
    this.name = 'MiddlewareAbort'
  }
}

/** What `callModel` runs around one model call; absent when the harness has no middleware. */
export interface ModelCallHooks {
  /** onConfig (and, on the turn's first model call, setup, onConfig at 'init' and onStart). */
  config(config: ChatMiddlewareConfig): Promise<ChatMiddlewareConfig>
  /** A chunk of the model stream through every onChunk, in order: what comes out is what the turn collects. */
  chunk(chunk: StreamChunk): Promise<StreamChunk[]>
  /** onUsage for a RUN_FINISHED that reports usage. */
  finished(chunk: StreamChunk): Promise<void>
  /** Throws MiddlewareAbort if a hook called ctx.abort; awaits `ctx.defer`red promises. */
  done(): Promise<void>
  readonly signal: AbortSignal
}

/**
 * The model-call hooks of one model call, in the turn worker; undefined when the harness has no
 * middleware. Each model call made runs them, also one made again after a crash (its first try's
 * response never reached the log). The hooks' `ctx.emitCustomEvent` reaches the session's followers.
 */
export async function modelCallHooks(
  harness: Harness,
  log: SessionLog,
  call: {
    inputId: string
    iteration: number
    /** The id the model call's text streams under (TanStack's currentMessageId). */
    messageId: string
    messages: ModelMessage[]
    context?: unknown
  },
): Promise<ModelCallHooks | undefined> {
  const middleware = harness.middleware
  if (middleware.length === 0) return undefined
  const label = `a model-call middleware hook of turn ${call.inputId}`
  const emit = customEvents(
    log,
    { label, inputId: call.inputId },
    await resolveSecrets(harness, log.sessionId),
    harness.durability.maxValueBytes,
  )
  const aborter = new AbortController()
  let aborted: string | undefined
  const run = middlewareRun(harness, {
    sessionId: log.sessionId,
    inputId: call.inputId,
    phase: 'init',
    iteration: call.iteration,
    messages: call.messages,
    signal: aborter.signal,
    context: call.context,
    abort(reason) {
      aborted ??= reason ?? 'Aborted by middleware.'
      aborter.abort(new MiddlewareAbort(aborted))
    },
    emitCustomEvent: emit,
  })
  const { ctx } = run
  const pipeConfig = async (config: ChatMiddlewareConfig) => {
    let current = config
    for (const mw of middleware) {
      const result = await mw.onConfig?.(ctx, current)
      // a tool call runs in a tool worker that finds its tool by name among the harness's: offer no other
      // name; a wrapped execute of one is bound again there (src/call/wrappedExecute.ts), but an agent
      // tool runs no execute (docs/decisions/wrapped-execute.md, docs/decisions/middleware-per-step.md)
      for (const tool of result?.tools ?? []) checkOffered(harness, mw, tool)
      if (result)
        current = {
          ...current,
          ...result,
          ...('messages' in result && !('providerMessages' in result) ? { providerMessages: result.messages } : {}),
        }
    }
    ctx.messages = current.messages
    return current
  }
  return {
    signal: aborter.signal,
    async config(config) {
      let current = config
      if (call.iteration === 0) {
        await run.setup()
        current = await pipeConfig(current)
        for (const mw of middleware) await mw.onStart?.(ctx)
      }
      // chat() begins each iteration with onIteration, then onConfig at 'beforeModel'
      ctx.currentMessageId = call.messageId
      for (const mw of middleware) await mw.onIteration?.(ctx, { iteration: call.iteration, messageId: call.messageId })
      ctx.phase = 'beforeModel'
      current = await pipeConfig(current)
      ctx.phase = 'modelStream'
      return current
    },
    async chunk(chunk) {
      let chunks = [chunk]
      for (const mw of middleware) {
        if (!mw.onChunk) continue
        const next: StreamChunk[] = []
        for (const c of chunks) {
          const result = await mw.onChunk(ctx, c)
          if (result === null) continue
          if (result === undefined) next.push(c)
          else if (Array.isArray(result)) next.push(...result)
          else next.push(result)
        }
        chunks = next
      }
      for (const c of chunks) {
        ctx.chunkIndex++
        if (c.type === 'TEXT_MESSAGE_CONTENT') ctx.accumulatedContent += c.delta ?? ''
      }
      return chunks
    },
    async finished(chunk) {
      if (chunk.type !== 'RUN_FINISHED') return
      const usage = usageInfo(chunk)
      if (usage) for (const mw of middleware) await mw.onUsage?.(ctx, usage)
    },
    async done() {
      ctx.phase = 'afterModel'
      await run.drain()
      if (aborted !== undefined) throw new MiddlewareAbort(aborted)
    },
  }
}

/** Refuses a tool onConfig offers the model that no tool worker could run as offered (MiddlewareToolError). */
function checkOffered(harness: Harness, mw: ChatMiddleware, tool: { name: string }): void {
  const own = toolOf(harness, tool.name)
  if (!own) throw new MiddlewareToolError(mw.name ?? 'unnamed', tool.name, toolNames(harness))
  if (own !== tool && isAgentTool(own)) throw new MiddlewareToolError(mw.name ?? 'unnamed', tool.name, toolNames(harness), 'agent')
}

/** RUN_FINISHED usage as onUsage gets it: TanStack's TokenUsage, or AG-UI's `usage[]` read as TanStack reads it. */
function usageInfo(chunk: Extract<StreamChunk, { type: 'RUN_FINISHED' }>): TokenUsage | undefined {
  return Array.isArray(chunk.usage) ? fromSpecTokenUsage(chunk.usage) : chunk.usage
}

/**
 * The terminal hook of a settled turn (onFinish, onError or onAbort), run by whichever process's settle
 * won (the turn worker, `session.abort`, the sweeper): at most once a turn. Duration is from the input.
 */
export async function terminalHooks(
  harness: Harness,
  log: SessionLog,
  input: { entryId: string; at: number; responses?: number; context?: string },
  record: RecordOf<'harness.input.settled'>,
  known?: { usage?: ModelUsage },
): Promise<void> {
  const middleware: ReadonlyArray<ChatMiddleware> = harness.middleware
  const hook = record.outcome === 'completed' ? 'onFinish' : record.outcome === 'aborted' ? 'onAbort' : 'onError'
  if (!middleware.some((mw) => mw[hook])) return
  const run = middlewareRun(harness, {
    sessionId: log.sessionId,
    inputId: record.inputId,
    phase: 'afterModel',
    iteration: Math.max(0, (input.responses ?? 1) - 1),
    messages: [],
    context: contextOf(input),
    abort() {},
    emitCustomEvent() {},
  })
  const duration = Math.max(0, Date.now() - input.at)
  if (record.outcome === 'completed') {
    const usage = known ? known.usage : await lastUsage(log, record.inputId)
    const info = { finishReason: 'stop', duration, content: record.text ?? '', ...(usage ? { usage } : {}) }
    for (const mw of middleware) await mw.onFinish?.(run.ctx, info)
  } else if (record.outcome === 'aborted') {
    for (const mw of middleware) await mw.onAbort?.(run.ctx, { reason: record.error?.message, duration, cancelRequested: true })
  } else {
    const error = Object.assign(new Error(record.error?.message ?? 'Turn failed.'), { code: record.error?.code })
    for (const mw of middleware) await mw.onError?.(run.ctx, { error, duration })
  }
  await run.drain()
}

/** The token usage of a turn's last model response, from the session's conversation (from its latest compaction on, when the turn is there). */
async function lastUsage(log: SessionLog, inputId: string): Promise<ModelUsage | undefined> {
  const ofTurn = (entries: LogEntry[]) => entries.filter((e) => isRecord(e, 'harness.model.response') && e.record.inputId === inputId)
  const read = await log.inputs.conversation({ since: 'compaction' })
  const recent = ofTurn(read.entries)
  const responses = recent.length > 0 || !read.partial ? recent : ofTurn(await log.inputs.conversation())
  const last = responses.at(-1)
  return last && isRecord(last, 'harness.model.response') ? last.record.usage : undefined
}
