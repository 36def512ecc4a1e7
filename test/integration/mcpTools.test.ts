// mcpTools (durable-harness/mcp) against an MCP server of the test's own (the SDK's McpServer over
// stateless Streamable HTTP, in this process): a harness's model calls its tools, the idempotency key
// travels in `_meta`, a task is polled with the call parked between polls, error results and JSON-RPC
// errors are the model's tool errors, and a worker SIGKILLed between the request and its result
// re-sends the same key.
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks'
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'
import type { ModelMessage } from '@tanstack/ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError } from '../../src/errors/index.js'
import { defineHarness, isDurableHarnessError, type Harness } from '../../src/index.js'
import { IDEMPOTENCY_KEY_META, mcpTools, type McpDurableTool } from '../../src/mcp/mcpTools.js'
import { scriptedModel } from '../../src/testing/index.js'
import { connectMcp, mcpShopAt } from '../fixtures/mcpTools.js'
import { useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

/** One request the server saw: its tool, the idempotency key in its `_meta`, its input, the sending worker's pid. */
interface Seen {
  tool: string
  key: unknown
  input: unknown
  pid: number
  ttl?: number | null | undefined
}

/** The test's MCP server: `charge` counts one charge per idempotency key, and can hold a request open. */
function useMcpServer() {
  const state = {
    url: '',
    seen: [] as Seen[],
    /** Charges done, by order id: a second charge of an order would be a double side effect. */
    charges: new Map<string, number>(),
    /** The first charge request of this order is held open until `release` (the test kills its worker meanwhile). */
    hold: undefined as undefined | { orderId: string; arrived: (seen: Seen) => void; released: Promise<void> },
  }
  const byKey = new Map<string, { chargeId: string; amount: number }>()
  const taskStore = new InMemoryTaskStore()
  let release = () => {}
  let http: Server

  const mcpServer = (request: IncomingMessage) => {
    const pid = Number(request.headers['x-worker-pid'])
    const see = (tool: string, input: unknown, meta: Record<string, unknown> | undefined, ttl?: number | null) => {
      const seen = { tool, key: meta?.[IDEMPOTENCY_KEY_META], input, pid, ...(ttl !== undefined ? { ttl } : {}) }
      state.seen.push(seen)
      return seen
    }
    const server = new McpServer(
      { name: 'test-billing', version: '1.0.0' },
      { capabilities: { tasks: { requests: { tools: { call: {} } } } }, taskStore },
    )
    server.registerTool(
      'charge',
      {
        description: 'Charge an order',
        inputSchema: { orderId: z.string(), amount: z.number() },
        outputSchema: { chargeId: z.string(), amount: z.number() },
      },
      async ({ orderId, amount }, extra) => {
        const seen = see('charge', { orderId, amount }, extra._meta)
        const key = String(seen.key)
        // dedupe by the idempotency key: a request again with the same key gets the first charge back
        let charge = byKey.get(key)
        if (!charge) {
          state.charges.set(orderId, (state.charges.get(orderId) ?? 0) + 1)
          charge = { chargeId: `ch_${orderId}_${state.charges.get(orderId)}`, amount }
          byKey.set(key, charge)
          const hold = state.hold
          if (hold?.orderId === orderId) {
            state.hold = undefined
            hold.arrived(seen)
            await hold.released
          }
        }
        return { content: [{ type: 'text', text: JSON.stringify(charge) }], structuredContent: charge }
      },
    )
    server.registerTool('lookup', { description: 'Stock of a SKU', inputSchema: { sku: z.string() } }, async ({ sku }, extra) => {
      see('lookup', { sku }, extra._meta)
      return {
        content: [
          { type: 'text', text: `sku ${sku}` },
          { type: 'text', text: 'in stock: 3' },
        ],
      }
    })
    server.registerTool('refund', { description: 'Refund an order', inputSchema: { orderId: z.string() } }, async ({ orderId }, extra) => {
      see('refund', { orderId }, extra._meta)
      return { isError: true, content: [{ type: 'text', text: `refund refused: order ${orderId} was never charged` }] }
    })
    // a task of ~1.5 s: the client polls (the server suggests every 300 ms)
    server.experimental.tasks.registerToolTask(
      'report',
      { description: 'Build the monthly report', inputSchema: { month: z.string() }, execution: { taskSupport: 'required' } },
      {
        createTask: async ({ month }, extra) => {
          see('report', { month }, extra._meta, extra.taskRequestedTtl)
          const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl ?? null, pollInterval: 300 })
          setTimeout(() => {
            const report = { month, total: 1234 }
            void taskStore.storeTaskResult(task.taskId, 'completed', {
              content: [{ type: 'text', text: JSON.stringify(report) }],
              structuredContent: report,
            })
          }, 1_500)
          return { task }
        },
        getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
        getTaskResult: async (_args, extra) => CallToolResultSchema.parse(await extra.taskStore.getTaskResult(extra.taskId)),
      },
    )
    // a task the server forgets at once (ttl 100 ms): the first poll gets a JSON-RPC error
    server.experimental.tasks.registerToolTask(
      'vanishing',
      { description: 'A task the server loses', inputSchema: { n: z.number() }, execution: { taskSupport: 'required' } },
      {
        createTask: async ({ n }, extra) => {
          see('vanishing', { n }, extra._meta, extra.taskRequestedTtl)
          return { task: await extra.taskStore.createTask({ ttl: 100, pollInterval: 300 }) }
        },
        getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
        getTaskResult: async (_args, extra) => CallToolResultSchema.parse(await extra.taskStore.getTaskResult(extra.taskId)),
      },
    )
    return server
  }

  beforeAll(async () => {
    // stateless: a server and transport per request, so any client (any worker) reads any task
    http = createServer((request, response) => {
      if (request.method !== 'POST') return void response.writeHead(405).end()
      const server = mcpServer(request)
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      response.on('close', () => void transport.close().then(() => server.close()))
      void server.connect(transport).then(() => transport.handleRequest(request, response))
    })
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
    state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`
  })
  afterAll(async () => {
    release()
    taskStore.cleanup()
    http.closeAllConnections()
    await new Promise((resolve) => http.close(resolve))
  })

  return Object.assign(state, {
    /** Holds the first charge of `orderId` open; resolves with that request once it arrived. */
    holdFirstCharge(orderId: string): Promise<Seen> {
      const released = new Promise<void>((resolve) => (release = resolve))
      return new Promise((arrived) => (state.hold = { orderId, arrived, released }))
    },
    release: () => release(),
    seenOf: (tool: string) => state.seen.filter((s) => s.tool === tool),
  })
}

/** A scripted model: first the given tool calls, then a text of every tool message it was shown. */
function callsThenEcho(calls: Array<{ name: string; input: unknown }>) {
  return scriptedModel([
    { toolCalls: calls },
    ({ messages }: { messages: ModelMessage[] }) => ({
      text: `done: ${messages
        .filter((m) => m.role === 'tool')
        .map((m) => String(m.content))
        .join(' | ')}`,
    }),
  ])
}

const mcp = useMcpServer()

describe('mcpTools in a harness (in-process workers)', () => {
  const hosts = useInProcessHosts()

  async function connect() {
    const client = await connectMcp(mcp.url)
    hosts.defer(() => client.close())
    return client
  }

  async function run(name: string, tools: McpDurableTool[], calls: Array<{ name: string; input: unknown }>) {
    const harness = defineHarness({ name, adapter: callsThenEcho(calls), tools })
    const { host } = hosts.start(harness, name)
    const session = host.open(harness, { sessionId: `${name}-s1` })
    const { inputId } = await session.prompt('go')
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    const entries = await session.log.read()
    const [started] = records(entries, 'harness.tool.started')
    return { settled, entries, session, toolCallId: String(started?.toolCallId) }
  }

  it("the model calls the server's tools: structuredContent and joined text come back in the turn; each request's _meta holds the call's idempotency key", async () => {
    const client = await connect()
    const tools = await mcpTools(client, { names: ['charge', 'lookup'] })
    // the model is shown each tool's own name, description and input JSON Schema; replay defaults to 'never'
    const { tools: listed } = await client.listTools()
    expect(tools.map((t) => [t.name, t.description, t.inputSchema, t.replay])).toEqual(
      listed.filter((t) => t.name === 'charge' || t.name === 'lookup').map((t) => [t.name, t.description, t.inputSchema, 'never']),
    )

    const { settled, entries, session } = await run('mcp-one', tools, [
      { name: 'charge', input: { orderId: 'o-1', amount: 42 } },
      { name: 'lookup', input: { sku: 'kite' } },
    ])
    expect(settled).toMatchObject({ outcome: 'completed', text: 'done: {"chargeId":"ch_o-1_1","amount":42} | sku kite\nin stock: 3' })
    const callIds = new Map(records(entries, 'harness.tool.started').map((r) => [r.name, r.toolCallId]))
    expect(mcp.seenOf('charge')).toEqual([
      expect.objectContaining({ key: `${session.sessionId}:${callIds.get('charge')}:mcp:charge`, input: { orderId: 'o-1', amount: 42 } }),
    ])
    expect(mcp.seenOf('lookup')).toEqual([expect.objectContaining({ key: `${session.sessionId}:${callIds.get('lookup')}:mcp:lookup` })])
  })

  it('a task-mode tool: one step creates the task, the call parks between polls (harness.tool.suspended), the result arrives', async () => {
    const tools = await mcpTools(await connect(), { names: ['report'] })
    const { settled, entries, session, toolCallId } = await run('mcp-task', tools, [{ name: 'report', input: { month: '2025-01' } }])
    expect(settled).toMatchObject({ outcome: 'completed', text: 'done: {"month":"2025-01","total":1234}' })
    // the creation carried the key and the default ttl of a day
    expect(mcp.seenOf('report')).toEqual([
      expect.objectContaining({ key: `${session.sessionId}:${toolCallId}:mcp:report`, ttl: 86_400_000 }),
    ])

    const mine = entries.filter((e) => (e.record as { toolCallId?: string }).toolCallId === toolCallId)
    const steps = records(mine, 'harness.tool.step').map((r) => r.name)
    const polls = steps.filter((name) => name.startsWith('status:'))
    expect(steps).toEqual(['mcp:report', ...polls, 'result'])
    expect(polls.length).toBeGreaterThanOrEqual(2)
    expect(records(mine, 'harness.tool.sleep').map((r) => r.name)).toEqual(polls.map((_, i) => `poll:${i + 1}`))
    // parked before each poll: a suspended record (kind sleep) between the step before it and the poll
    const order = mine
      .map((e) => e.record as Record<string, any>)
      .filter((r) => r.type === 'harness.tool.step' || r.type === 'harness.tool.suspended')
    const kinds = order.map((r) => (r.type === 'harness.tool.step' ? r.name : `suspended:${r.kind}`))
    expect(kinds).toEqual(['mcp:report', ...polls.flatMap((name) => ['suspended:sleep', name]), 'result'])
    // each wake is one more attempt of the same call, not a new call: one started record, one result
    expect(records(mine, 'harness.tool.started')).toHaveLength(1)
    expect(records(mine, 'harness.tool.result')).toHaveLength(1)
  })

  it('an isError result is the tool error the model reads, with the text the server sent', async () => {
    const tools = await mcpTools(await connect(), { names: ['refund'] })
    const { settled, entries } = await run('mcp-error', tools, [{ name: 'refund', input: { orderId: 'o-9' } }])
    expect(settled).toMatchObject({ outcome: 'completed', text: 'done: {"error":"refund refused: order o-9 was never charged"}' })
    expect(records(entries, 'harness.tool.result')[0]?.error).toEqual({ message: 'refund refused: order o-9 was never charged' })
  })

  it("a JSON-RPC error from the server (the task's tasks/get fails) is the tool error, with its message", async () => {
    const tools = await mcpTools(await connect(), { names: ['vanishing'] })
    const { settled, entries } = await run('mcp-rpc-error', tools, [{ name: 'vanishing', input: { n: 1 } }])
    expect(settled).toMatchObject({ outcome: 'completed' })
    const [result] = records(entries, 'harness.tool.result')
    // the SDK's server already puts "MCP error <code>: " in the wire message, and its client adds one more
    expect(result?.error?.message).toMatch(/^MCP error -32602: .*Failed to retrieve task: Task not found$/)
    expect((settled as { text: string }).text).toBe(`done: ${JSON.stringify({ error: result?.error?.message })}`)
  })

  it('names the server does not list are a ConfigError naming them and the tools it has; bad options too', async () => {
    const client = await connect()
    const error = await mcpTools(client, { names: ['charge', 'teleport', 'fly'] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect(isDurableHarnessError(error) && error.code).toBe('config')
    expect((error as Error).message).toBe(
      'mcpTools: test-billing lists no tool named "teleport", "fly"; its tools: charge, lookup, refund, report, vanishing.',
    )
    await expect(mcpTools(client, { replay: 'sometimes' as 'safe' })).rejects.toThrow(ConfigError)
    expect((await mcpTools(client, { replay: 'safe' })).map((t) => t.replay)).toEqual(['safe', 'safe', 'safe', 'safe', 'safe'])
  })
})

describe('mcpTools across a SIGKILL between the request and its result', () => {
  // filled before useWorkerProcesses's own beforeAll makes its hosts (hooks run in the order registered)
  const harnesses: Harness[] = []
  let shop: Harness
  let close = async () => {}
  beforeAll(async () => {
    const built = await mcpShopAt(mcp.url)
    close = () => built.client.close()
    shop = built.harness
    harnesses.push(shop)
  })
  afterAll(() => close())
  const ctx = useWorkerProcesses({ label: 'mcp-killed', harnesses, module: 'test/fixtures/mcpTools.ts', workers: 0 })
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) ctx.workers.push(await ctx.spawn({ env: { MCP_URL: mcp.url } }))
  })

  it('the worker dies while the server holds the request: the retry carries the same idempotency key, and the server charges once', async () => {
    const held = mcp.holdFirstCharge('o-kill')
    const session = ctx.host.open(shop, { sessionId: 'mcp-killed' })
    const { inputId } = await session.prompt('charge:o-kill')
    // the request reached the server (its side effect is done); the step's value is not stored yet
    const first = await held
    const runner = ctx.workers.find((w) => w.proc.pid === first.pid)
    expect(runner).toBeDefined()
    expect(records(await session.log.read(), 'harness.tool.step')).toEqual([])
    await runner!.kill('SIGKILL')
    mcp.release()

    const settled = await session.settled(inputId, { timeoutMs: patient(60_000) })
    expect(settled).toMatchObject({ outcome: 'completed', text: 'charged: {"chargeId":"ch_o-kill_1","amount":42}' })
    const entries = await session.log.read()
    const [started] = records(entries, 'harness.tool.started')
    const key = `mcp-killed:${started!.toolCallId}:mcp:charge`
    const charges = mcp.seenOf('charge').filter((s) => (s.input as { orderId: string }).orderId === 'o-kill')
    expect(charges.map((s) => s.key)).toEqual([key, key])
    expect(charges[1]!.pid).not.toBe(first.pid)
    expect(mcp.charges.get('o-kill')).toBe(1)
    expect(records(entries, 'harness.tool.started').map((r) => [r.attempt, r.reason])).toEqual([
      [1, 'fresh'],
      [2, 'rerun'],
    ])
    expect(records(entries, 'harness.tool.step').map((r) => [r.name, r.value])).toEqual([
      ['mcp:charge', { isError: false, value: { chargeId: 'ch_o-kill_1', amount: 42 } }],
    ])
  })
})
