// An MCP task across a SIGKILL of its server (docs/mcp.md, R27): the SDK's client creates a task on one
// `harness mcp` process, which also runs the call's worker; that process is SIGKILLed between the
// call's two side effects; a second `harness mcp` process recovers the call and returns its result
// through tasks/result. Each side effect ran once.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createHarnessHost } from '../../src/index.js'
import { shop } from '../fixtures/shop.js'
import { spawnBin } from '../helpers/cli.js'
import { quiet } from '../helpers/hosts.js'
import { patient } from '../helpers/patience.js'
import { cleanupPrefix, getRedisUrl, uniquePrefix } from '../rig.js'

describe('an MCP task whose server is SIGKILLed mid-call', () => {
  const closers: Array<() => Promise<unknown>> = []
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {})
  })

  async function startServer(env: Record<string, string>) {
    const bin = spawnBin(['mcp', 'test/fixtures/shop.ts', '--port', '0', '--concurrency', '2'], env)
    closers.push(async () => {
      bin.proc.kill('SIGKILL')
      await bin.closed
    })
    const line = await bin.waitForLine((l) => l.startsWith('MCP server: '))
    return { bin, url: line.slice('MCP server: '.length).trim() }
  }

  async function connect(url: string): Promise<Client> {
    const client = new Client({ name: 'killed-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(url)))
    closers.push(() => client.close())
    return client
  }

  it('R27 a second server process returns the result through tasks/result, and the side effect ran once', async () => {
    const env = { REDIS_URL: await getRedisUrl(), DH_PREFIX: uniquePrefix('mcp-killed'), LOG_LEVEL: 'warn' }
    const host = createHarnessHost({ redis: env.REDIS_URL, prefix: env.DH_PREFIX, harnesses: [shop], logger: quiet })
    closers.push(() => cleanupPrefix(env.REDIS_URL, env.DH_PREFIX))
    closers.push(() => host.close())
    const first = await startServer(env)
    const client = await connect(first.url)
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'checkout', arguments: { orderId: 'mk1', pauseMs: 4_000 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    )
    // the call ran its charge on the first server's worker (the only one yet): kill it before the invoice
    const session = host.open(shop, { sessionId: `mcp.shop.p${Buffer.from('local').toString('base64url')}` })
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    const second = await startServer(env)
    first.bin.proc.kill('SIGKILL')
    await first.bin.closed
    const other = await connect(second.url)
    const result = await other.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: patient(30_000) })
    expect(result.structuredContent).toEqual({ chargeId: 'ch_mk1' })
    expect((await other.experimental.tasks.getTask(task.taskId)).status).toBe('completed')
    const redis = new Redis(env.REDIS_URL)
    const billing = await redis.hgetall(`${env.DH_PREFIX}:billing`).finally(() => redis.disconnect())
    const counts = Object.entries(billing).map(([key, n]) => [key.split('|')[0], n])
    expect(counts.sort()).toEqual([
      ['charge', '1'],
      ['invoice', '1'],
    ])
    const started = (await session.log.read({ types: ['harness.tool.started'] })).map((e) => (e.record as { reason: string }).reason)
    expect(started).toEqual(['fresh', 'rerun'])
  }, 90_000)
})
