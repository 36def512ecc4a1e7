// TanStack ChatMiddleware in a durable turn: order across middlewares, onBeforeToolCall decisions
// (skip / transformArgs / abort), onChunk rewriting the model stream, onUsage, ctx.abort, and
// TanStack's own middlewares working through a durable turn.
import { toolDefinition, type ChatMiddleware } from '@tanstack/ai'
import { contentGuardMiddleware, toolCacheMiddleware } from '@tanstack/ai/middlewares'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness } from '../../src/index.js'
import type { AfterToolCallInfo } from '../../src/entries/hooks.js'
import { ConfigError } from '../../src/errors/index.js'
import { scriptedModel, type ScriptEntry } from '../../src/testing/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { queuePrefix } from '../rig.js'
import { Job, Queue } from 'bullmq'
import { toolJobId } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { patient } from '../helpers/patience.js'

const hosts = useInProcessHosts()

/** A tool that records the inputs it ran with. */
function countTool(ran: unknown[]) {
  return toolDefinition({ name: 'count', description: 'counts', inputSchema: z.object({ n: z.number() }) }).server(async (input) => {
    ran.push(input)
    return { counted: input.n }
  })
}

async function runTurn(harness: ReturnType<typeof defineHarness>, label: string, text = 'go') {
  const { host } = hosts.start(harness, label)
  const session = host.open(harness, { sessionId: label })
  const { inputId } = await session.prompt(text)
  const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
  const results = (await session.log.read({ types: ['harness.tool.result'] })).map((e) => e.record)
  const responses = (await session.log.read({ types: ['harness.model.response'] })).map((e) => e.record)
  return { settled, results, responses, session }
}

describe('TanStack middleware in a durable turn', () => {
  it('runs two middlewares in array order around the model calls and the tool call, then our onAfterToolCall hook', async () => {
    const seen: string[] = []
    const hookInfos: AfterToolCallInfo[] = []
    const recorder = (name: string): ChatMiddleware => ({
      name,
      onConfig: (ctx) => void seen.push(`${name}:onConfig:${ctx.phase}`),
      onStart: () => void seen.push(`${name}:onStart`),
      onIteration: (_ctx, info) => void seen.push(`${name}:onIteration:${info.iteration}`),
      onBeforeToolCall: (_ctx, { toolName, args }) => void seen.push(`${name}:onBeforeToolCall:${toolName}:${JSON.stringify(args)}`),
      onAfterToolCall: (_ctx, info) => void seen.push(`${name}:onAfterToolCall:${info.toolName}:${info.ok}:${JSON.stringify(info.result)}`),
      onFinish: (_ctx, info) => void seen.push(`${name}:onFinish:${info.content}`),
      onError: () => void seen.push(`${name}:onError`),
      onAbort: () => void seen.push(`${name}:onAbort`),
    })
    const ran: unknown[] = []
    const harness = defineHarness({
      name: 'mw-order',
      adapter: scriptedModel([{ toolCalls: [{ name: 'count', input: { n: 1 } }] }, { text: 'done' }]),
      tools: [countTool(ran)],
      middleware: [recorder('A'), recorder('B')],
      hooks: {
        onAfterToolCall: (info) => {
          seen.push(`hook:onAfterToolCall:${info.name}`)
          hookInfos.push(info)
        },
      },
    })
    const { settled } = await runTurn(harness, 'mw-order')
    expect(settled).toMatchObject({ outcome: 'completed', text: 'done' })
    expect(seen).toEqual([
      'A:onConfig:init',
      'B:onConfig:init',
      'A:onStart',
      'B:onStart',
      'A:onIteration:0',
      'B:onIteration:0',
      'A:onConfig:beforeModel',
      'B:onConfig:beforeModel',
      // the tool worker binds the tool as chat() does before its first model call (a wrapper of execute would be bound here)
      'A:onConfig:init',
      'B:onConfig:init',
      'A:onConfig:beforeModel',
      'B:onConfig:beforeModel',
      'A:onBeforeToolCall:count:{"n":1}',
      'B:onBeforeToolCall:count:{"n":1}',
      'A:onAfterToolCall:count:true:{"counted":1}',
      'B:onAfterToolCall:count:true:{"counted":1}',
      'hook:onAfterToolCall:count',
      'A:onIteration:1',
      'B:onIteration:1',
      'A:onConfig:beforeModel',
      'B:onConfig:beforeModel',
      'A:onFinish:done',
      'B:onFinish:done',
    ])
    // our own hook gets TanStack's AfterToolCallInfo fields and keeps `name`
    expect(hookInfos).toEqual([
      expect.objectContaining({
        name: 'count',
        toolName: 'count',
        ok: true,
        result: { counted: 1 },
        toolCall: expect.objectContaining({ type: 'function', function: { name: 'count', arguments: '{"n":1}' } }),
        duration: expect.any(Number),
      }),
    ])
  })

  it('onBeforeToolCall skip keeps its result without running the tool, transformArgs runs it with checked args, abort lands a tool error', async () => {
    const ran: unknown[] = []
    const decider: ChatMiddleware = {
      name: 'decider',
      onBeforeToolCall(_ctx, { args }) {
        const n = (args as { n: number }).n
        if (n === 1) return { type: 'skip', result: { skipped: true } }
        if (n === 2) return { type: 'transformArgs', args: { n: 20 } }
        if (n === 3) return { type: 'abort', reason: 'no threes' }
        if (n === 4) return { type: 'transformArgs', args: { n: 'four' } }
        return undefined
      },
    }
    const calls = [1, 2, 3, 4].map((n) => ({ name: 'count', input: { n } }))
    const harness = defineHarness({
      name: 'mw-decide',
      adapter: scriptedModel([{ toolCalls: calls }, { text: 'done' }]),
      tools: [countTool(ran)],
      middleware: [decider],
    })
    const { settled, results } = await runTurn(harness, 'mw-decide')
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(ran).toEqual([{ n: 20 }])
    const byCall = Object.fromEntries(results.map((r) => [(r as { toolCallId: string }).toolCallId, r]))
    expect(byCall['call-0-0']).toMatchObject({ result: { skipped: true } })
    expect(byCall['call-0-1']).toMatchObject({ result: { counted: 20 } })
    expect(byCall['call-0-2']).toMatchObject({ error: { code: 'aborted_by_middleware', message: 'no threes' } })
    expect(byCall['call-0-3']).toMatchObject({ error: { code: 'invalid_tool_input' } })
  })

  it('onChunk drops and rewrites text chunks before the turn collects them', async () => {
    const harness = defineHarness({
      name: 'mw-chunk',
      adapter: scriptedModel([{ text: 'hi there secret' }], { stream: { chars: 9, delayMs: 0 } }),
      middleware: [
        {
          name: 'shout',
          onChunk(_ctx, chunk) {
            if (chunk.type !== 'TEXT_MESSAGE_CONTENT') return undefined
            if (chunk.delta.includes('secret')) return null
            return { ...chunk, delta: chunk.delta.toUpperCase() }
          },
        },
      ],
    })
    const { settled, responses } = await runTurn(harness, 'mw-chunk')
    expect(settled).toMatchObject({ outcome: 'completed', text: 'HI THERE ' })
    expect(responses).toEqual([expect.objectContaining({ text: 'HI THERE ' })])
  })

  it('onUsage sees the usage each model call reports, the same the log keeps; onFinish gets the last', async () => {
    const usages: unknown[] = []
    let finishUsage: unknown
    const u1 = { promptTokens: 10, completionTokens: 2, totalTokens: 12 }
    const u2 = { promptTokens: 20, completionTokens: 5, totalTokens: 25 }
    const script: ScriptEntry[] = [
      { toolCalls: [{ name: 'count', input: { n: 1 } }], usage: u1 },
      { text: 'done', usage: u2 },
    ]
    const harness = defineHarness({
      name: 'mw-usage',
      adapter: scriptedModel(script),
      tools: [countTool([])],
      middleware: [{ onUsage: (_ctx, usage) => void usages.push(usage), onFinish: (_ctx, info) => void (finishUsage = info.usage) }],
    })
    const { settled, responses } = await runTurn(harness, 'mw-usage')
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(usages).toEqual([u1, u2])
    // the log keeps the model it was sent to as well (docs/spend.md)
    expect(responses.map((r) => (r as { usage?: unknown }).usage)).toEqual([u1, u2].map((u) => ({ ...u, model: 'scripted' })))
    expect(finishUsage).toEqual({ ...u2, model: 'scripted' })
  })

  it('ctx.abort from a model-call hook settles the turn as aborted and runs onAbort once', async () => {
    const terminal: string[] = []
    const harness = defineHarness({
      name: 'mw-abort',
      adapter: scriptedModel([{ text: 'forbidden words' }]),
      middleware: [
        {
          onChunk(ctx, chunk) {
            if (chunk.type === 'TEXT_MESSAGE_CONTENT' && chunk.delta.includes('forbidden')) ctx.abort('policy')
          },
          onFinish: () => void terminal.push('finish'),
          onAbort: (_ctx, info) => void terminal.push(`abort:${info.reason}`),
        },
      ],
    })
    const { settled, responses } = await runTurn(harness, 'mw-abort')
    expect(settled).toMatchObject({ outcome: 'aborted', error: { code: 'aborted', message: 'policy' } })
    expect(responses).toEqual([])
    expect(terminal).toEqual(['abort:policy'])
  })

  it("TanStack's contentGuardMiddleware redacts the model's text in the durable turn and its log", async () => {
    const harness = defineHarness({
      name: 'mw-guard',
      adapter: scriptedModel([{ text: 'your SSN is 123-45-6789, keep it safe' }]),
      middleware: [contentGuardMiddleware({ rules: [{ pattern: /\b\d{3}-\d{2}-\d{4}\b/g, replacement: '[SSN]' }], strategy: 'delta' })],
    })
    const { settled, responses } = await runTurn(harness, 'mw-guard')
    expect(settled).toMatchObject({ outcome: 'completed', text: 'your SSN is [SSN], keep it safe' })
    expect(JSON.stringify(responses)).not.toContain('123-45-6789')
  })

  it("TanStack's toolCacheMiddleware serves a repeated call from its cache: the tool runs once, both calls keep the result", async () => {
    const ran: unknown[] = []
    const harness = defineHarness({
      name: 'mw-cache',
      adapter: scriptedModel([
        { toolCalls: [{ name: 'count', input: { n: 7 } }] },
        { toolCalls: [{ name: 'count', input: { n: 7 } }] },
        { text: 'done' },
      ]),
      tools: [countTool(ran)],
      middleware: [toolCacheMiddleware()],
    })
    const { settled, results } = await runTurn(harness, 'mw-cache')
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(ran).toEqual([{ n: 7 }])
    expect(results).toEqual([
      expect.objectContaining({ toolCallId: 'call-0-0', result: { counted: 7 } }),
      expect.objectContaining({ toolCallId: 'call-1-0', result: { counted: 7 } }),
    ])
  })
})

describe('middleware the durable turn does not run', () => {
  it('defineHarness refuses a middleware with a member a durable turn never calls, naming it, instead of ignoring it', () => {
    for (const member of ['onShouldContinue', 'onToolPhaseComplete', 'onInterruptBoundary', 'onStructuredOutputConfig', 'sandbox']) {
      const make = () =>
        defineHarness({
          name: 'mw-refused',
          adapter: scriptedModel([]),
          middleware: [{ name: 'm', [member]: () => undefined } as ChatMiddleware],
        })
      expect(make).toThrow(ConfigError)
      expect(make).toThrow(new RegExp(`middleware "m" uses ${member}`))
    }
  })

  it("ctx.emitCustomEvent from a model-call hook reaches the session's followers as a CUSTOM event of the turn", async () => {
    const harness = defineHarness({
      name: 'mw-emit',
      adapter: scriptedModel([{ text: 'hi' }]),
      middleware: [{ name: 'emitter', onIteration: (ctx, { iteration }) => ctx.emitCustomEvent('progress', { iteration }) }],
    })
    const { settled, session } = await runTurn(harness, 'mw-emit')
    expect(settled).toMatchObject({ outcome: 'completed', text: 'hi' })
    const events = []
    for await (const { event } of session.events({ follow: false })) events.push(event)
    expect(events.filter((e) => e.type === 'CUSTOM' && e.name === 'progress')).toEqual([
      expect.objectContaining({ value: { iteration: 0 }, metadata: { inputId: expect.any(String) } }),
    ])
  })
})

describe('middleware durability', () => {
  it('a call whose result is already kept does not run its tool hooks again when its job runs again (a crash after the landing)', async () => {
    const calls: string[] = []
    const watcher: ChatMiddleware = {
      name: 'watcher',
      onBeforeToolCall: (_ctx, { toolCallId }) => void calls.push(`before:${toolCallId}`),
      onAfterToolCall: (_ctx, { toolCallId }) => void calls.push(`after:${toolCallId}`),
    }
    const ran: unknown[] = []
    const harness = defineHarness({ name: 'mw-kept', adapter: scriptedModel([]), tools: [countTool(ran)], middleware: [watcher] })
    const { host, prefix } = hosts.start(harness, 'mw-kept')
    const session = host.open(harness, { sessionId: 'kept' })
    expect(await session.runTool({ name: 'count', input: { n: 3 }, toolCallId: 'k1' })).toEqual({ counted: 3 })
    expect(calls).toEqual(['before:k1', 'after:k1'])
    // what a crash after the landing leaves: the call's job runs again. Here its finished job is removed
    // and the caller's retry adds a new one, which a worker runs: begin finds the kept result
    const tools = new Queue(toolQueueName(harness.name), { connection: { url: hosts.url() }, prefix: queuePrefix(prefix, 'kept') })
    hosts.defer(() => tools.close())
    await (await Job.fromId(tools, toolJobId('kept', 'k1')))!.remove()
    expect(await session.runTool({ name: 'count', input: { n: 3 }, toolCallId: 'k1' })).toEqual({ counted: 3 })
    await until(async () => (await Job.fromId(tools, toolJobId('kept', 'k1')))?.finishedOn !== undefined, 'the new job to run')
    expect(calls).toEqual(['before:k1', 'after:k1'])
    expect(ran).toHaveLength(1)
  })
})
