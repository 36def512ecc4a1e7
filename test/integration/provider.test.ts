// Turns driven by a real provider adapter, `@tanstack/ai-openai`'s Chat Completions adapter, against
// an OpenAI-compatible streaming server on 127.0.0.1 (test/helpers/openaiServer.ts), on worker
// processes; and token usage, from that adapter and from scriptedModel.
import { toolDefinition } from '@tanstack/ai'
import { createOpenaiChatCompletions } from '@tanstack/ai-openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { provider } from '../fixtures/provider.js'
import { useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { startModelServer, type ChatRequest, type ModelReply, type ModelServer } from '../helpers/openaiServer.js'
import { spawnWorker } from '../helpers/workerProcess.js'

const MODULE = 'test/fixtures/provider.ts'

/** The user message a request answers (the last one) and what came after it. */
function turnOf(request: ChatRequest) {
  const last = request.messages.map((m) => m.role).lastIndexOf('user')
  return { prompt: request.messages[last]!.content!, after: request.messages.slice(last + 1) }
}

/**
 * The model: a prompt `city:<name>` gets, first, a little text and two parallel calls (weather, then
 * stock) whose arguments arrive in pieces; once the tool results follow, a text made of them. Usage
 * grows with the request, so each call's numbers differ.
 */
function answer(request: ChatRequest): ModelReply {
  const { prompt, after } = turnOf(request)
  const city = prompt.replace(/^city:/, '')
  const usage = (completion: number) => ({
    prompt_tokens: 10 * request.messages.length,
    completion_tokens: completion,
    total_tokens: 10 * request.messages.length + completion,
  })
  const results = after.filter((m) => m.role === 'tool')
  if (results.length === 0) {
    return {
      text: ['Checking ', 'both.'],
      toolCalls: [
        // strict tools: the model sends every field, `null` for an optional one
        { id: `call_W${city}`, name: 'weather', arguments: ['{"ci', `ty":"${city}",`, '"unit":null}'] },
        { id: `call_S${city}`, name: 'stock', arguments: ['{"sku":"A-1"', `,"city":"${city}"`, '}'] },
      ],
      usage: usage(20),
    }
  }
  return { text: ['Sky: ', `${results[0]!.content}; `, `stock: ${results[1]!.content}`], usage: usage(7) }
}

describe('a real provider adapter (@tanstack/ai-openai Chat Completions) over worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'provider', harnesses: [provider], module: MODULE, workers: 0 })
  let server: ModelServer
  beforeAll(async () => {
    server = await startModelServer(answer)
    for (let i = 0; i < 2; i++)
      ctx.workers.push(
        await spawnWorker({ redisUrl: ctx.url, prefix: ctx.prefix, module: MODULE, env: { OPENAI_BASE_URL: server.baseURL } }),
      )
  })
  afterAll(() => server?.close())
  const requestsOf = (prompt: string) => server.requests.filter((r) => turnOf(r).prompt === prompt)

  it('runs both parallel tool calls of a streamed response and completes with the text; the model reads the results in call order under its own ids', async () => {
    const session = ctx.host.open(provider, { sessionId: 'oslo' })
    const { inputId } = await session.prompt('city:Oslo')
    expect(await session.settled(inputId)).toEqual({
      outcome: 'completed',
      text: 'Sky: Oslo: sunny; stock: {"sku":"A-1","units":3}',
    })

    const [first, second, ...more] = requestsOf('city:Oslo')
    expect(more).toEqual([])
    // the adapter got the tools as chat() gives them: JSON Schema, which it sends as strict functions
    expect(first!.stream_options).toEqual({ include_usage: true })
    expect(first!.messages[0]).toEqual({ role: 'system', content: 'You answer shop questions.' })
    expect(first!.tools!.map((t) => [t.function.name, t.function.strict, Object.keys(t.function.parameters.properties as object)])).toEqual(
      [
        ['weather', true, ['city', 'unit']],
        ['stock', true, ['sku', 'city']],
      ],
    )

    // the log: the calls with their parsed input (the strict `null` undone), results landed stock first
    const entries = await session.log.read()
    const [response] = records(entries, 'harness.model.response')
    expect(response!.text).toBe('Checking both.')
    expect(response!.toolCalls.map((c: { name: string; input: unknown }) => [c.name, c.input])).toEqual([
      ['weather', { city: 'Oslo' }],
      ['stock', { sku: 'A-1', city: 'Oslo' }],
    ])
    expect(records(entries, 'harness.tool.result').map((r) => r.name)).toEqual(['stock', 'weather'])

    // the second request: the assistant's calls under the model's ids, then the results in call order
    expect(turnOf(second!).after).toEqual([
      {
        role: 'assistant',
        content: 'Checking both.',
        tool_calls: [
          { id: 'call_WOslo', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          { id: 'call_SOslo', type: 'function', function: { name: 'stock', arguments: '{"sku":"A-1","city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_WOslo', content: 'Oslo: sunny' },
      { role: 'tool', tool_call_id: 'call_SOslo', content: '{"sku":"A-1","units":3}' },
    ])
  })

  it('keeps the usage the provider reported on each model response, and session.usage() sums it per turn and per session', async () => {
    const session = ctx.host.open(provider, { sessionId: 'lima' })
    const turns: string[] = []
    for (const prompt of ['city:Lima', 'city:Quito']) {
      const { inputId } = await session.prompt(prompt)
      expect((await session.settled(inputId)).outcome).toBe('completed')
      turns.push(inputId)
    }
    // what the server sent, request by request (each turn made two model calls)
    const sent = (prompt: string) =>
      requestsOf(prompt).map((r) => {
        const { usage } = answer(r)
        return { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens }
      })
    const lima = sent('city:Lima')
    const quito = sent('city:Quito')
    expect([lima.length, quito.length]).toEqual([2, 2])
    const responses = records(await session.log.read(), 'harness.model.response')
    expect(responses.map((r) => r.usage)).toMatchObject([...lima, ...quito])

    const sum = (list: typeof lima) => ({
      promptTokens: list.reduce((n, u) => n + u.promptTokens, 0),
      completionTokens: list.reduce((n, u) => n + u.completionTokens, 0),
      totalTokens: list.reduce((n, u) => n + u.totalTokens, 0),
    })
    expect(await session.usage()).toMatchObject({
      turns: { [turns[0]!]: { ...sum(lima), calls: 2 }, [turns[1]!]: { ...sum(quito), calls: 2 } },
      total: { ...sum([...lima, ...quito]), calls: 4, estimatedCalls: 0 },
    })
    // the second turn's calls read the whole history: more prompt tokens than the first turn's
    expect(quito[0]!.promptTokens).toBeGreaterThan(lima[0]!.promptTokens)
  })
})

describe('a real provider adapter in process', () => {
  const hosts = useInProcessHosts()

  /** A provider that streams "Thinking" and then stalls, behind the real OpenAI adapter of a harness named `name`. */
  async function stallingProvider(name: string, durability: { timeoutMs?: number } = {}) {
    const server = await startModelServer(() => ({
      text: ['Thinking'],
      stall: true,
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }))
    hosts.defer(() => server.close())
    const harness = defineHarness({
      name,
      adapter: createOpenaiChatCompletions('gpt-4o-mini', 'sk-test', { baseURL: server.baseURL, maxRetries: 0 }),
      durability,
    })
    return { server, harness }
  }

  it("cuts the provider's HTTP request when the turn's timeoutMs passes while the model stream stalls: the turn fails with timeout", async () => {
    const { server, harness } = await stallingProvider('stalling', { timeoutMs: 1_000 })
    const { host } = hosts.start(harness, 'provider-stall')
    const session = host.open(harness, { sessionId: 'stall' })
    const { inputId } = await session.prompt('hello')
    const settled = await session.settled(inputId)
    expect(settled.outcome).toBe('failed')
    expect(settled.error?.code).toBe('timeout')
    await server.cuts(1) // the adapter's request was aborted, not left open
    expect(server.cut).toHaveLength(server.requests.length)
    expect(records(await session.log.read(), 'harness.model.response')).toEqual([])
    // R25: the cut try counts once, estimated (its streamed text included)
    await until(async () => records(await session.log.read(), 'harness.usage').length === server.requests.length, 'the cut tries counted')
    expect(records(await session.log.read(), 'harness.usage').map((r) => [r.reason, r.usage.estimated])).toEqual(
      server.requests.map(() => ['cut', true]),
    )
    expect((await session.usage()).total.calls).toBe(server.requests.length)
  })

  it('R25 a turn aborted while its model call streams counts that try once, as cut: the settle counts it, the stopped worker adds nothing', async () => {
    const { server, harness } = await stallingProvider('aborted-stream')
    const { host } = hosts.start(harness, 'provider-abort')
    const session = host.open(harness, { sessionId: 'abort' })
    const { inputId } = await session.prompt('hello')
    await until(async () => server.requests.length === 1, 'the request went out')
    expect(await session.abort(inputId)).toBe(true)
    await server.cuts(1)
    const counted = async () => records(await session.log.read(), 'harness.usage')
    await until(async () => (await counted()).length === 1, 'the cut try counted')
    // the stopped worker's own count comes after the settle's: give it time, it must add nothing
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect((await counted()).map((r) => r.reason)).toEqual(['cut'])
    // the settle's count (the mark's estimate: the prompt, no output), not the worker's (its streamed text)
    expect((await counted())[0]!.usage.completionTokens).toBe(0)
    expect((await session.usage()).total).toMatchObject({ calls: 1, estimatedCalls: 1 })
  })
})

describe('usage from scriptedModel', () => {
  const hosts = useInProcessHosts()

  it('R25 session.usage() sums the usage scriptedModel reports; a response that reports none is counted as an estimate', async () => {
    const harness = defineHarness({
      name: 'scriptedUsage',
      adapter: scriptedModel([
        { toolCalls: [{ name: 'echo', input: {} }], usage: { promptTokens: 11, completionTokens: 3, totalTokens: 14 } },
        { text: 'first', usage: { promptTokens: 20, completionTokens: 2, totalTokens: 22 } },
        { text: 'second' },
      ]),
      tools: [toolDefinition({ name: 'echo', description: 'Echo', inputSchema: z.object({}) }).server(() => 'echoed')],
    })
    const { host } = hosts.start(harness, 'scripted-usage')
    const session = host.open(harness, { sessionId: 'scripted' })
    const first = await session.prompt('one')
    await session.settled(first.inputId)
    const second = await session.prompt('two')
    expect(await session.settled(second.inputId)).toEqual({ outcome: 'completed', text: 'second' })
    const responses = records(await session.log.read(), 'harness.model.response')
    const [, , third] = responses.map((r) => r.usage)
    expect(responses.map((r) => r.usage)).toEqual([
      { promptTokens: 11, completionTokens: 3, totalTokens: 14, model: 'scripted' },
      { promptTokens: 20, completionTokens: 2, totalTokens: 22, model: 'scripted' },
      // reported none: the prompt's size and the text's, estimated (docs/spend.md)
      { promptTokens: expect.any(Number), completionTokens: 2, totalTokens: expect.any(Number), model: 'scripted', estimated: true },
    ])
    const estimate = { promptTokens: third!.promptTokens, completionTokens: 2, totalTokens: third!.totalTokens }
    const usage = await session.usage()
    expect(usage.turns).toMatchObject({
      [first.inputId]: { promptTokens: 31, completionTokens: 5, totalTokens: 36, calls: 2, estimatedCalls: 0 },
      [second.inputId]: { ...estimate, calls: 1, estimatedCalls: 1 },
    })
    expect(usage.total).toMatchObject({ promptTokens: 31 + estimate.promptTokens, calls: 3, estimatedCalls: 1, cost: 0 })
    expect(usage.byModel).toEqual({ scripted: usage.total })
  })
})
