import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { toolDefinition } from '@tanstack/ai'
import { ConfigError } from '../errors/index.js'
import { durableTool, parseDuration, type Duration, type Replay } from '../tool/index.js'
import { callMcpTool, type McpCallPlan } from './clientCall.js'

export { IDEMPOTENCY_KEY_META } from './clientCall.js'
export { McpToolError } from './clientResult.js'

/** Options of `mcpTools`: which tools, what a crash does to a call, and how tasks are used. */
export interface McpToolsOptions {
  /** Only these tools of the server; a name it does not list is a ConfigError. Default: every tool it lists. */
  names?: readonly string[]
  /**
   * What a call cut by a crash does (R10). Default `'never'`: an MCP tool is a side effect outside, and
   * a server that ignores the idempotency key in `_meta` would do it twice; the model gets the
   * `interrupted` tool error instead. `'safe'`: the call runs again and re-sends its request with the
   * same key: for servers that dedupe by it, and for read-only tools.
   */
  replay?: Replay
  /**
   * When a tool is called as an MCP task (its polls park the call: no worker slot while it works).
   * `'whenSupported'` (default): a tool whose `execution.taskSupport` is `'required'`, or `'optional'`
   * on a server that declares tasks for tools/call. `'whenRequired'`: only a `'required'` one.
   */
  tasks?: 'whenSupported' | 'whenRequired'
  /** The ttl each task asks for (the server may give less): how long its result stays readable. Default `'1d'`. */
  taskTtl?: Duration
}

const DEFAULT_TASK_TTL: Duration = '1d'

/**
 * An MCP server's tools as durable tools of a harness (`defineHarness({ tools })`), one per tool the
 * server lists (every page of `tools/list`), filtered by `names`. `client` is the SDK's `Client`,
 * connected by you over any transport. The model sees each tool's own name, description and input
 * JSON Schema; the server validates the input.
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/sdk/client/index.js'
 * import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
 * import { defineHarness } from 'durable-harness'
 * import { mcpTools } from 'durable-harness/mcp'
 *
 * const client = new Client({ name: 'acme-agent', version: '1.0.0' })
 * await client.connect(new StreamableHTTPClientTransport(new URL('https://billing.example.com/mcp')))
 * export const assistant = defineHarness({ name: 'acme/assistant', adapter, tools: await mcpTools(client, { names: ['charge'] }) })
 * ```
 */
export async function mcpTools(client: Client, options: McpToolsOptions = {}) {
  const { replay, tasks, ttlMs } = checkedOptions(options)
  const listed = await listAllTools(client)
  const chosen = options.names ? pickNamed(listed, options.names, client) : listed
  const serverTasks = client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined
  return chosen.map((tool) => {
    const support = tool.execution?.taskSupport
    const asTask = support === 'required' || (support === 'optional' && tasks === 'whenSupported' && serverTasks)
    const plan: McpCallPlan = { name: tool.name, task: asTask ? { ttlMs } : false }
    return durableTool(
      toolDefinition({
        name: tool.name,
        description: tool.description ?? tool.title ?? tool.annotations?.title ?? tool.name,
        // passed through as JSON Schema: the model is shown the server's own schema
        inputSchema: tool.inputSchema,
      }),
      (input, ctx) => callMcpTool(client, plan, input, ctx),
      { replay },
    )
  })
}

/** One durable tool of an MCP server's, as `mcpTools` returns it. */
export type McpDurableTool = Awaited<ReturnType<typeof mcpTools>>[number]

function checkedOptions(options: McpToolsOptions): { replay: Replay; tasks: 'whenSupported' | 'whenRequired'; ttlMs: number } {
  const replay = options.replay ?? 'never'
  if (replay !== 'safe' && replay !== 'never')
    throw new ConfigError(`mcpTools: replay must be 'safe' or 'never', got ${JSON.stringify(replay)}.`)
  const tasks = options.tasks ?? 'whenSupported'
  if (tasks !== 'whenSupported' && tasks !== 'whenRequired')
    throw new ConfigError(`mcpTools: tasks must be 'whenSupported' or 'whenRequired', got ${JSON.stringify(tasks)}.`)
  if (options.names !== undefined && !(Array.isArray(options.names) && options.names.every((name) => typeof name === 'string')))
    throw new ConfigError(`mcpTools: names must be an array of tool names, got ${JSON.stringify(options.names)}.`)
  const ttlMs = parseDuration(options.taskTtl ?? DEFAULT_TASK_TTL)
  if (ttlMs <= 0) throw new ConfigError(`mcpTools: taskTtl must be longer than 0, got ${JSON.stringify(options.taskTtl)}.`)
  return { replay, tasks, ttlMs }
}

/** Every page of tools/list; a cursor the server gives twice would never end, so it is an error. */
async function listAllTools(client: Client): Promise<Tool[]> {
  const tools: Tool[] = []
  const cursors = new Set<string>()
  let cursor: string | undefined
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor })
    tools.push(...page.tools)
    cursor = page.nextCursor
    if (cursor !== undefined && cursors.has(cursor))
      throw new Error(`mcpTools: the MCP server gave the tools/list cursor ${JSON.stringify(cursor)} twice; its listing never ends.`)
    if (cursor !== undefined) cursors.add(cursor)
  } while (cursor !== undefined)
  return tools
}

function pickNamed(listed: Tool[], names: readonly string[], client: Client): Tool[] {
  const known = new Set(listed.map((tool) => tool.name))
  const missing = [...new Set(names)].filter((name) => !known.has(name))
  if (missing.length > 0) {
    const server = client.getServerVersion()?.name ?? 'the MCP server'
    const listing = listed.length > 0 ? listed.map((tool) => tool.name).join(', ') : '(none)'
    throw new ConfigError(
      `mcpTools: ${server} lists no tool named ${missing.map((name) => JSON.stringify(name)).join(', ')}; its tools: ${listing}.`,
    )
  }
  const wanted = new Set(names)
  return listed.filter((tool) => wanted.has(tool.name))
}
