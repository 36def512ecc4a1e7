import type { AnyServerTool, ChatMiddleware, ChatMiddlewareConfig, ChatMiddlewareContext, Tool, ToolExecutionContext } from '@tanstack/ai'
import type { Harness } from '../core/index.js'
import { MiddlewareExecuteError } from '../errors/index.js'
import type { ToolErrorPayload } from '../log/index.js'
import { toToolError, type Park } from '../tool/index.js'
import type { CallOutcome } from './runCall.js'

/** The wrapper a middleware's onConfig put around the called tool, and the middlewares whose onConfig replaced it. */
export interface ToolWrapper {
  tool: Tool
  by: string[]
}

/**
 * The called tool bound to this attempt, as a middleware's wrapper gets it in `config.tools`: its
 * `execute` runs the attempt's durable run (runCall) once. What a run of it ended in is kept here,
 * so the attempt ends as the tool's run said, whatever the wrapper made of it: a park parks, a lost
 * lock or fenced write fails the attempt, a second run lands MiddlewareExecuteError.
 */
export class BoundTool {
  readonly tool: Tool
  private runs = 0
  private running: Promise<unknown> | undefined
  private fatal: { error: unknown } | undefined
  private parked: Park | undefined
  private refused: MiddlewareExecuteError | undefined
  /** The errors the bound execute threw for the tool's own errors: a wrapper that rethrows one lands the tool's payload. */
  private readonly thrown = new Map<unknown, ToolErrorPayload>()
  private wrappedBy: string[] = []
  private ended = false

  constructor(
    own: AnyServerTool,
    private readonly run: (input: unknown) => Promise<CallOutcome>,
  ) {
    // a copy: the harness's own tool object stays as it is (a wrapper may spread it, never mutates ours)
    this.tool = { ...own, execute: (args: unknown) => this.execute(args) }
  }

  private async execute(args: unknown): Promise<unknown> {
    // a wrapper that calls it later (a timer): the attempt has landed or parked, nothing of it may start now
    if (this.ended) throw new Error(`The execute of tool "${this.tool.name}" was called after its attempt ended; it did not run.`)
    if (++this.runs > 1) {
      this.refused ??= new MiddlewareExecuteError(this.tool.name, this.wrappedBy)
      throw this.refused
    }
    const running = this.run(args)
    this.running = running.catch(() => {})
    let outcome: CallOutcome
    try {
      outcome = await running
    } catch (error) {
      this.fatal ??= { error }
      throw error
    }
    if ('park' in outcome) {
      this.parked = outcome.park
      throw outcome.park
    }
    if ('error' in outcome) {
      const error = Object.assign(new Error(outcome.error.message), { code: outcome.error.code })
      this.thrown.set(error, outcome.error)
      throw error
    }
    return outcome.result
  }

  /**
   * Runs the wrapper with the attempt's args and returns the attempt's outcome: the wrapper's return
   * (or what it threw, as a tool error), unless the tool's run parked, failed the attempt or was run twice.
   */
  async outcome(wrapper: ToolWrapper, args: unknown, context: ToolExecutionContext): Promise<CallOutcome> {
    this.wrappedBy = wrapper.by
    let ended: CallOutcome
    try {
      ended = { result: await wrapper.tool.execute!(args, context) }
    } catch (error) {
      ended = { error: this.thrown.get(error) ?? toToolError(error) }
    }
    // a wrapper that did not await the tool: the attempt ends once the tool's run has
    if (this.running) await this.running
    this.ended = true
    if (this.fatal) throw this.fatal.error
    if (this.parked) return { park: this.parked }
    if (this.refused) return { error: toToolError(this.refused) }
    return ended
  }
}

/**
 * Binds the called tool as chat() binds it before its first model call: `onConfig` of each middleware
 * at phase `init`, then `beforeModel`, piped, over the harness's tools with the called one replaced by
 * the bound tool; the tool of the call's name that comes out is what runs. Only the tools are read;
 * the messages are empty here (the tool worker has no model call). Undefined when no middleware
 * replaced the tool (or removed it: onConfig chose what the model was offered, not what a logged call runs).
 */
export async function bindWrapper(
  harness: Harness,
  ctx: ChatMiddlewareContext,
  middleware: ReadonlyArray<ChatMiddleware>,
  bound: BoundTool,
): Promise<ToolWrapper | undefined> {
  const name = bound.tool.name
  let config: ChatMiddlewareConfig = {
    messages: [],
    systemPrompts: [...(harness.systemPrompts ?? [])],
    tools: harness.tools.map((tool) => (tool.name === name ? bound.tool : tool)),
  }
  const by: string[] = []
  for (const phase of ['init', 'beforeModel'] as const) {
    ctx.phase = phase
    for (const mw of middleware) {
      const result = await mw.onConfig?.(ctx, config)
      if (!result) continue
      const before = config.tools.find((tool) => tool.name === name)
      config = { ...config, ...result }
      const after = config.tools.find((tool) => tool.name === name)
      if (after && after !== before && !by.includes(mw.name ?? 'unnamed')) by.push(mw.name ?? 'unnamed')
    }
  }
  ctx.phase = 'beforeTools'
  const tool = config.tools.find((t) => t.name === name)
  if (!tool || tool === bound.tool) return undefined
  if (typeof tool.execute !== 'function')
    throw new Error(`onConfig returned tool "${name}" without an execute, so no wrapper of it can run.`)
  return { tool, by }
}
