// createMcpServer (docs/mcp.md, R27): the official SDK's client against a harness's durable tools over
// Streamable HTTP: tools/list, a plain tools/call, a task (get, result, list, cancel), a step.ask as
// input_required answered by elicitation, and tasks scoped to the principal that made them.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { describe, expect, it } from 'vitest'
import { toNodeListener } from '../../src/http/index.js'
import { createMcpServer, IDEMPOTENCY_KEY_META } from '../../src/mcp/index.js'
import { shop } from '../fixtures/shop.js'
import { approvals } from '../fixtures/approvals.js'
import { conformanceHarness as conformance } from '../fixtures/mcpConformanceTools.js'
import type { Harness } from '../../src/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { patient } from '../helpers/patience.js'

const TOKENS: Record<string, { id: string }> = { 'token-a': { id: 'alice' }, 'token-b': { id: 'bob' } }

describe('createMcpServer', () => {
  const hosts = useInProcessHosts()

  async function serve(harness: Harness = shop): Promise<{ url: string; prefix: string; host: ReturnType<typeof hosts.start>['host'] }> {
    const { host, prefix } = hosts.start(harness, 'mcp-server')
    const handler = createMcpServer({
      host,
      harness,
      authorize: (request) => TOKENS[(request.headers.get('authorization') ?? '').replace('Bearer ', '')] ?? null,
    })
    const server: Server = createServer(toNodeListener(handler))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    hosts.defer(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))))
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, prefix, host }
  }

  async function connect(url: string, token: string, answer?: (message: string) => Record<string, unknown> | 'decline'): Promise<Client> {
    const client = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } })
    if (answer)
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        const reply = answer(request.params.message)
        return reply === 'decline'
          ? { action: 'decline' }
          : { action: 'accept', content: reply as Record<string, string | number | boolean> }
      })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    )
    hosts.defer(() => client.close())
    return client
  }

  const createTask = (client: Client, name: string, args: Record<string, unknown>) =>
    client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } }, CreateTaskResultSchema)

  it('R27 lists the tools with their input schemas and runs a plain tools/call as a durable call', async () => {
    const { url, host } = await serve()
    const client = await connect(url, 'token-a')
    const { tools } = await client.listTools()
    const checkout = tools.find((t) => t.name === 'checkout')!
    expect(checkout.inputSchema).toMatchObject({ type: 'object', properties: { orderId: { type: 'string' } } })
    expect(checkout.execution).toEqual({ taskSupport: 'optional' })
    const result = await client.callTool({ name: 'checkout', arguments: { orderId: 'm1' } })
    expect(result.structuredContent).toEqual({ chargeId: 'ch_m1' })
    expect(result.isError).toBeFalsy()
    // a durable call of the principal's MCP session: its steps are in the log
    const session = host.open(shop, { sessionId: `mcp.shop.p${Buffer.from('alice').toString('base64url')}` })
    const steps = (await session.log.read({ types: ['harness.tool.step'] })).map((e) => e.record)
    expect(steps.map((r) => (r as { name: string }).name)).toEqual(['charge:m1', 'invoice:ch_m1'])
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/Unknown tool "nope"/)
  }, 30_000)

  it('R27 a task-augmented tools/call returns its task at once; tasks/get, tasks/result and tasks/list read it from Redis', async () => {
    const { url } = await serve()
    const client = await connect(url, 'token-a')
    const { task } = await createTask(client, 'checkout', { orderId: 't1', pauseMs: 300 })
    expect(task.status).toBe('working')
    expect(task.taskId).toMatch(/^[0-9a-z]+-[A-Za-z0-9_-]{16}$/)
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
    expect(result.structuredContent).toEqual({ chargeId: 'ch_t1' })
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('completed')
    const listed = await client.experimental.tasks.listTasks()
    expect(listed.tasks.map((t) => t.taskId)).toContain(task.taskId)
  }, 30_000)

  it('R27 a step.ask makes the task input_required; the elicitation answer is the ask value and the task completes', async () => {
    const { url } = await serve()
    const asked: string[] = []
    const client = await connect(url, 'token-a', (message) => (asked.push(message), { approved: true }))
    const { task } = await createTask(client, 'refund', { amount: 42 })
    for (let i = 0; (await client.experimental.tasks.getTask(task.taskId)).status !== 'input_required'; i++) {
      if (i > 200) throw new Error('the task never asked')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: patient(20_000) })
    expect(asked).toEqual(['Refund 42?'])
    expect(result.isError).toBeFalsy()
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('completed')
  }, 30_000)

  it('R27 a task of principal A is invisible to principal B: get, result, list and cancel', async () => {
    const { url } = await serve()
    const alice = await connect(url, 'token-a')
    const bob = await connect(url, 'token-b')
    const { task } = await createTask(alice, 'nap', { ms: 60_000 })
    await expect(bob.experimental.tasks.getTask(task.taskId)).rejects.toThrow(McpError)
    await expect(bob.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).rejects.toThrow(/not found/i)
    await expect(bob.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/not found/i)
    expect((await bob.experimental.tasks.listTasks()).tasks).toEqual([])
    expect((await alice.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId])
    // Alice cancels her parked task: it ends cancelled
    for (let i = 0; (await alice.experimental.tasks.getTask(task.taskId)).status === 'working'; i++) {
      try {
        expect((await alice.experimental.tasks.cancelTask(task.taskId)).status).toBe('cancelled')
        break
      } catch (error) {
        // still running its first step, not yet parked: a durable call is cancelled where it waits
        if (i > 100 || !/running a step/.test(String(error))) throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    expect((await alice.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled')
    const unauthorized = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(unauthorized.status).toBe(401)
  }, 30_000)

  it('R27 a tools/call that carries an idempotency key in _meta (as mcpTools sends it) is one call however often it is sent', async () => {
    const { url, host } = await serve()
    const client = await connect(url, 'token-a')
    const params = { name: 'checkout', arguments: { orderId: 'k1' }, _meta: { [IDEMPOTENCY_KEY_META]: 'caller:call-1:mcp:checkout' } }
    const [first, again] = await Promise.all([client.callTool(params), client.callTool(params)])
    expect(first.structuredContent).toEqual({ chargeId: 'ch_k1' })
    expect(again).toEqual(first)
    const { task } = await client.request({ method: 'tools/call', params: { ...params, task: {} } }, CreateTaskResultSchema)
    expect(task.taskId).toMatch(/^k[A-Za-z0-9_-]{22}$/)
    expect(task.status).toBe('completed')
    // one call: requested once, started once
    const session = host.open(shop, { sessionId: `mcp.shop.p${Buffer.from('alice').toString('base64url')}` })
    const entries = await session.log.read({ types: ['harness.tool.requested', 'harness.tool.started'] })
    expect(entries.map((e) => [e.record.type, 'toolCallId' in e.record ? e.record.toolCallId : undefined])).toEqual([
      ['harness.tool.requested', `mcp-${task.taskId}`],
      ['harness.tool.started', `mcp-${task.taskId}`],
    ])
    // the same key with another input is refused, not run
    await expect(client.callTool({ ...params, arguments: { orderId: 'k2' } })).rejects.toThrow(/already|conflict|another/i)
  }, 30_000)

  it('R27 an approval (needsApproval) is asked likewise: accepted, the tool runs; declined, it is denied and the task fails', async () => {
    const { url } = await serve(approvals)
    const yes = await connect(url, 'token-a', () => ({ approved: true }))
    const no = await connect(url, 'token-b', () => 'decline')
    const run = async (client: Client) => {
      const { task } = await createTask(client, 'transfer', { amount: 5 })
      for (let i = 0; (await client.experimental.tasks.getTask(task.taskId)).status !== 'input_required'; i++) {
        if (i > 200) throw new Error('the task never asked')
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: patient(20_000) })
      return { result, status: (await client.experimental.tasks.getTask(task.taskId)).status }
    }
    const approved = await run(yes)
    expect(approved.result.structuredContent).toEqual({ sent: 5 })
    expect(approved.status).toBe('completed')
    const denied = await run(no)
    expect(denied.result.isError).toBe(true)
    expect(denied.status).toBe('failed')
  }, 30_000)

  it('R27 a tool that fails at once is a tool error result (isError) or a failed task, never a JSON-RPC error, however fast it lands', async () => {
    const { url } = await serve(conformance)
    const client = await connect(url, 'token-a')
    // many at once: some land before their request's wait begins (started on this process's lane)
    const results = await Promise.all(Array.from({ length: 40 }, () => client.callTool({ name: 'test_error_handling', arguments: {} })))
    for (const result of results) {
      expect(result.isError).toBe(true)
      expect(result.content).toEqual([{ type: 'text', text: expect.stringContaining('intentionally returns an error') }])
    }
    const { task } = await createTask(client, 'test_error_handling', {})
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
    expect(result.isError).toBe(true)
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('failed')
  }, 30_000)

  it('R27 a principal canAccess refuses gets 403 and starts nothing; no principal gets 401', async () => {
    const { host } = hosts.start(shop, 'mcp-access')
    const handler = createMcpServer({
      host,
      harness: shop,
      authorize: (request) => TOKENS[(request.headers.get('authorization') ?? '').replace('Bearer ', '')] ?? null,
      canAccess: (principal) => principal.id === 'alice',
    })
    const call = (token: string | undefined) =>
      handler(
        new Request('http://127.0.0.1/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'checkout', arguments: { orderId: 'x' } } }),
        }),
      )
    expect((await call(undefined)).status).toBe(401)
    expect((await call('token-b')).status).toBe(403)
    const bob = host.open(shop, { sessionId: `mcp.shop.p${Buffer.from('bob').toString('base64url')}` })
    expect(await bob.log.read()).toEqual([])
  }, 30_000)
})
