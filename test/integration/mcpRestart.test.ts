// MCP tasks across a Redis restart (R27, docs/mcp.md): a task is a durable call, so all its state is in
// Redis and comes back from the AOF: a task that waits for its client's answer before Redis is
// SIGKILLed is still listed and input_required after the restart, and its answer by elicitation then
// completes it.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { describe, expect, it } from 'vitest'
import { toNodeListener } from '../../src/http/index.js'
import { createMcpServer } from '../../src/mcp/index.js'
import { shop } from '../fixtures/shop.js'
import { crashRedis, useInProcessHosts, usePrivateRedis } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'

describe('MCP tasks across a Redis restart', () => {
  const hosts = useInProcessHosts()
  const privateRedis = usePrivateRedis()

  it('R27 a task waiting for its answer survives a Redis SIGKILL: listed and input_required after the restart, then completed by elicitation', async () => {
    const server = privateRedis()
    const { host } = hosts.start(shop, 'mcp-restart', { redis: server.url })
    const http = createServer(toNodeListener(createMcpServer({ host, harness: shop, authorize: () => ({ id: 'carol' }) })))
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
    hosts.defer(() => new Promise((resolve) => (http.closeAllConnections(), http.close(resolve))))
    const client = new Client({ name: 'restart-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } })
    const asked: string[] = []
    client.setRequestHandler(
      ElicitRequestSchema,
      async (request) => (asked.push(request.params.message), { action: 'accept', content: { approved: true } }),
    )
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`)))
    hosts.defer(() => client.close())

    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'refund', arguments: { amount: 7 }, task: {} } },
      CreateTaskResultSchema,
    )
    const status = () =>
      client.experimental.tasks.getTask(task.taskId).then(
        (t) => t.status,
        () => 'unreadable',
      )
    await until(async () => (await status()) === 'input_required', 'the task asks', 30_000)

    await crashRedis(server)
    await until(async () => (await status()) === 'input_required', 'the task read back after the restart', 30_000)
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId])
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 30_000 })
    expect(asked).toEqual(['Refund 7?'])
    expect(result.isError).toBeFalsy()
    expect(await status()).toBe('completed')
  }, 90_000)
})
