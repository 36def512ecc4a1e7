// `npm run chaos -- --mcp`: each calling worker (callingWorker.ts) also serves the chaos harness over MCP
// (createMcpServer, docs/mcp.md) and makes its calls as MCP tasks against any calling worker's server,
// the SDK's own client, one key a call in `_meta`: a server SIGKILLed while it creates or answers a task
// is left for another, and the call asked again under the same key is the same durable call (R27). Its
// calls land in the session `mcp.chaos.p<base64url of self-<pid>>`, checked as the self calls are.
import { createServer } from 'node:http'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from 'pino'
import type { HarnessHost, RedisClient } from '../../src/index.js'
import { toNodeListener } from '../../src/http/index.js'
import { createMcpServer, IDEMPOTENCY_KEY_META } from '../../src/mcp/index.js'
import { chaos } from './harness.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Serves this worker's MCP endpoint and lists it in `<prefix>:chaos:mcp`; resolves with its URL. */
export async function serveMcp(host: HarnessHost, redis: RedisClient, prefix: string): Promise<string> {
  // the caller names itself: each calling worker's calls go to a session of its own
  const handler = createMcpServer({
    host,
    harness: chaos,
    authorize: (request) => ({ id: request.headers.get('x-chaos-caller') ?? 'anyone' }),
  })
  const server = createServer(toNodeListener(handler))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/mcp`
  await redis.sadd(`${prefix}:chaos:mcp`, url)
  return url
}

/**
 * One checkout as an MCP task: created on a server picked at random, then its result read on a server
 * picked at random; a server that fails (SIGKILLed, or Redis down) is skipped and the same request is
 * sent again, under the same key, until the result comes or `stopped()`.
 */
export async function callOverMcp(
  redis: RedisClient,
  prefix: string,
  caller: string,
  orderId: string,
  logger: Logger,
  stopped: () => Promise<boolean>,
): Promise<void> {
  const key = `${caller}:${orderId}`
  let taskId: string | undefined
  while (!(await stopped())) {
    const url = await redis.srandmember(`${prefix}:chaos:mcp`).catch(() => null)
    if (!url) return
    const client = new Client({ name: caller, version: '1.0.0' })
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { 'x-chaos-caller': caller } } }))
      const params = { name: 'checkout', arguments: { orderId }, _meta: { [IDEMPOTENCY_KEY_META]: key } }
      taskId ??= (
        await client.request({ method: 'tools/call', params: { ...params, task: {} } }, CreateTaskResultSchema, { timeout: 10_000 })
      ).task.taskId
      await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 30_000 })
      return
    } catch (err) {
      logger.warn({ err, url, orderId }, 'chaos: an MCP server failed; asking another')
      await sleep(200)
    } finally {
      await client.close().catch(() => {})
    }
  }
}
