// TanStack middleware that wraps a tool's execute (onConfig returns `{ ...tool, execute }`), as chat()
// binds it: the executed tool is the one onConfig returned, so the wrapper runs around the tool.
// Here the tool worker binds the wrapper around the durable tool of the attempt. The first two tests
// port the intent of TanStack's middleware.test.ts "onConfig tools transform" (the execute of the
// tool onConfig returned is the one run, once a call) and "onConfig tools sent to adapter" (the
// model is offered the tools onConfig returned).
import { toolDefinition, type AnyTextAdapter, type ChatMiddleware, type Tool } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { agentTool, defineHarness, durableTool, type Harness } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { patient } from '../helpers/patience.js'

const hosts = useInProcessHosts()

/** A durable tool whose one step records the input it ran with. */
function countTool(ran: unknown[]) {
  return durableTool(
    toolDefinition({ name: 'count', description: 'counts', inputSchema: z.object({ n: z.number() }) }),
    async (input, { step }) =>
      step.do('count', () => {
        ran.push(input)
        return { counted: input.n }
      }),
  )
}

const WRAPPED = Symbol('wrapped')
type Execute = NonNullable<Tool['execute']>

/**
 * A middleware whose onConfig wraps every tool's execute once (idempotent, as TanStack's own test
 * keeps its injection: onConfig runs at init and again before each model call).
 */
function wrapping(seen: string[], wrap: (tool: Tool, execute: Execute) => Execute, extra: Partial<Tool> = {}): ChatMiddleware {
  return {
    name: 'wrapper',
    onConfig(_ctx, config) {
      if (config.tools.every((tool) => WRAPPED in tool)) return undefined
      seen.push('onConfig')
      return {
        tools: config.tools.map((tool) =>
          WRAPPED in tool ? tool : { ...tool, ...extra, [WRAPPED]: true, execute: wrap(tool, tool.execute!) },
        ),
      }
    },
  }
}

/** The wrapper of a logging middleware: it sees the input and the result, and marks the result. */
const logging =
  (seen: string[]) =>
  (tool: Tool, execute: Execute): Execute =>
  async (args, options) => {
    seen.push(`wrap:before:${tool.name}:${JSON.stringify(args)}`)
    const result: unknown = await execute(args, options)
    seen.push(`wrap:after:${tool.name}:${JSON.stringify(result)}`)
    return { wrapped: result }
  }

async function runTurn(harness: Harness, label: string) {
  const { host } = hosts.start(harness, label)
  const session = host.open(harness, { sessionId: label })
  const { inputId } = await session.prompt('go')
  const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
  const log = (await session.log.read()).map((e) => e.record)
  return { settled, log, session, host }
}

describe('middleware that wraps a tool execute', () => {
  it("TanStack's onConfig tools transform: the wrapper a middleware's onConfig puts around a durable tool runs once a call, sees the input and the result, and its return is the kept result", async () => {
    const seen: string[] = []
    const ran: unknown[] = []
    const harness = defineHarness({
      name: 'wrap-once',
      adapter: scriptedModel([{ toolCalls: [{ name: 'count', input: { n: 1 } }] }, { text: 'done' }]),
      tools: [countTool(ran)],
      middleware: [wrapping(seen, logging(seen))],
    })
    const { settled, log } = await runTurn(harness, 'wrap-once')
    expect(settled).toMatchObject({ outcome: 'completed', text: 'done' })
    expect(seen.filter((s) => s.startsWith('wrap:'))).toEqual(['wrap:before:count:{"n":1}', 'wrap:after:count:{"counted":1}'])
    expect(ran).toEqual([{ n: 1 }])
    expect(log.filter((r) => r.type === 'harness.tool.result')).toEqual([
      expect.objectContaining({ toolCallId: 'call-0-0', result: { wrapped: { counted: 1 } } }),
    ])
    // the step stays a durable step of the call, the input the log holds is the model's
    expect(log.filter((r) => r.type === 'harness.tool.step')).toEqual([
      expect.objectContaining({ toolCallId: 'call-0-0', name: 'count', value: { counted: 1 } }),
    ])
  })

  it("TanStack's onConfig tools sent to the adapter: the model is offered the tool as onConfig returned it, and the call runs through that wrapper", async () => {
    const seen: string[] = []
    const offered: string[][] = []
    const scripted = scriptedModel([{ toolCalls: [{ name: 'count', input: { n: 2 } }] }, { text: 'done' }])
    const adapter: AnyTextAdapter = {
      ...scripted,
      chatStream(request) {
        offered.push((request.tools ?? []).map((t) => `${t.name}: ${t.description}`))
        return scripted.chatStream(request)
      },
    }
    const harness = defineHarness({
      name: 'wrap-offer',
      adapter,
      tools: [countTool([])],
      middleware: [wrapping(seen, logging(seen), { description: 'counts (audited)' })],
    })
    const { settled } = await runTurn(harness, 'wrap-offer')
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(offered[0]).toEqual(['count: counts (audited)'])
    expect(seen.filter((s) => s.startsWith('wrap:'))).toEqual(['wrap:before:count:{"n":2}', 'wrap:after:count:{"counted":2}'])
  })

  it('R12: the wrapper runs between onBeforeToolCall and onAfterToolCall, which sees the wrapper return; a hook replaceResult still wins', async () => {
    const seen: string[] = []
    const watcher: ChatMiddleware = {
      name: 'watcher',
      onBeforeToolCall: (_ctx, { args }) => void seen.push(`before:${JSON.stringify(args)}`),
      onAfterToolCall: (_ctx, info) => void seen.push(`after:${JSON.stringify(info.result)}`),
    }
    const harness = defineHarness({
      name: 'wrap-r12',
      adapter: scriptedModel([{ toolCalls: [{ name: 'count', input: { n: 3 } }] }, { text: 'done' }]),
      tools: [countTool([])],
      middleware: [watcher, wrapping(seen, logging(seen))],
      hooks: { onAfterToolCall: (info) => ({ type: 'replaceResult', result: { kept: info.result } }) },
    })
    const { settled, log } = await runTurn(harness, 'wrap-r12')
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(seen.filter((s) => s !== 'onConfig')).toEqual([
      'before:{"n":3}',
      'wrap:before:count:{"n":3}',
      'wrap:after:count:{"counted":3}',
      'after:{"wrapped":{"counted":3}}',
    ])
    expect(log.filter((r) => r.type === 'harness.tool.result')).toEqual([
      expect.objectContaining({ result: { kept: { wrapped: { counted: 3 } } } }),
    ])
  })

  it('a wrapper that runs the tool a second time in one attempt is refused: the second run throws MiddlewareExecuteError, the call lands it even when the wrapper catches it, the tool ran once', async () => {
    const seen: string[] = []
    const ran: unknown[] = []
    const twice =
      (_tool: Tool, execute: Execute): Execute =>
      async (args, options) => {
        const first: unknown = await execute(args, options)
        try {
          await execute(args, options)
        } catch (error) {
          seen.push(`second:${(error as { code?: string }).code}`)
        }
        return first
      }
    const harness = defineHarness({
      name: 'wrap-twice',
      adapter: scriptedModel([]),
      tools: [countTool(ran)],
      middleware: [wrapping(seen, twice)],
    })
    const { host } = hosts.start(harness, 'wrap-twice')
    const session = host.open(harness, { sessionId: 'twice' })
    const failed = await session.runTool({ name: 'count', input: { n: 4 }, toolCallId: 't1' }).catch((error: unknown) => error)
    expect(failed).toMatchObject({ code: 'middleware_execute' })
    expect((failed as Error).message).toMatch(/ran the tool's execute a second time in one attempt/)
    expect(seen).toContain('second:middleware_execute')
    expect(ran).toEqual([{ n: 4 }])
  })

  it('a wrapper that runs the tool with other args: they are checked by its schema and run in that attempt; the log keeps the input it was called with', async () => {
    const ran: unknown[] = []
    const doubling =
      (_tool: Tool, execute: Execute): Execute =>
      (args, options) =>
        execute({ n: (args as { n: number }).n * 2 }, options)
    const badArgs =
      (_tool: Tool, execute: Execute): Execute =>
      (_args, options) =>
        execute({ n: 'many' }, options)
    for (const [label, wrap] of [
      ['wrap-args', doubling],
      ['wrap-bad-args', badArgs],
    ] as const) {
      const harness = defineHarness({ name: label, adapter: scriptedModel([]), tools: [countTool(ran)], middleware: [wrapping([], wrap)] })
      const { host } = hosts.start(harness, label)
      const session = host.open(harness, { sessionId: label })
      const outcome = await session.runTool({ name: 'count', input: { n: 5 }, toolCallId: 'a1' }).catch((error: unknown) => error)
      const requested = (await session.log.read({ types: ['harness.tool.requested'] })).map((e) => e.record)
      expect(requested).toEqual([expect.objectContaining({ input: { n: 5 } })])
      if (label === 'wrap-args') expect(outcome).toEqual({ counted: 10 })
      else expect(outcome).toMatchObject({ code: 'invalid_tool_input' })
    }
    expect(ran).toEqual([{ n: 10 }])
  })

  it('R14: a wrapped durable tool that sleeps parks even when its wrapper catches the park; the resumed attempt runs the wrapper again and keeps its return', async () => {
    const seen: string[] = []
    const napper = durableTool(
      toolDefinition({ name: 'nap', description: 'naps', inputSchema: z.object({}) }),
      async (_input, { step }) => {
        await step.sleep('nap', 200)
        return 'awake'
      },
    )
    const catching =
      (_tool: Tool, execute: Execute): Execute =>
      async (args, options) => {
        seen.push('wrap:before')
        try {
          return { wrapped: (await execute(args, options)) as unknown }
        } catch {
          seen.push('wrap:caught')
          return { caught: true }
        }
      }
    const harness = defineHarness({ name: 'wrap-park', adapter: scriptedModel([]), tools: [napper], middleware: [wrapping([], catching)] })
    const { host } = hosts.start(harness, 'wrap-park')
    const session = host.open(harness, { sessionId: 'park' })
    expect(await session.runTool({ name: 'nap', input: {}, toolCallId: 'p1' })).toEqual({ wrapped: 'awake' })
    expect(seen).toEqual(['wrap:before', 'wrap:caught', 'wrap:before'])
    const log = (await session.log.read()).map((e) => e.record)
    expect(log.filter((r) => r.type === 'harness.tool.suspended')).toHaveLength(1)
  })

  it("a middleware onConfig that wraps an agent tool's execute fails the turn with MiddlewareToolError: a child session runs no execute to wrap", async () => {
    const child = defineHarness({ name: 'wrap-child', adapter: scriptedModel([{ text: 'child done' }]) })
    const harness = defineHarness({
      name: 'wrap-agent',
      adapter: scriptedModel([{ toolCalls: [{ name: 'helper', input: { prompt: 'hi' } }] }, { text: 'done' }]),
      tools: [agentTool(child, { name: 'helper' })],
      middleware: [wrapping([], logging([]))],
    })
    const { settled, log } = await runTurn(harness, 'wrap-agent')
    expect(settled).toMatchObject({ outcome: 'failed', error: { code: 'middleware_tool' } })
    expect(settled.error?.message).toMatch(/wraps the execute of agent tool "helper"/)
    expect(log.filter((r) => r.type === 'harness.model.response')).toEqual([])
  })
})
