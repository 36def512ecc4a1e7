// createMcpServer: a harness's durable tools over MCP's Streamable HTTP, with tools/call as a durable
// call and MCP Tasks read from Redis, so any server process answers any request (docs/mcp.md).
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  CompleteRequestSchema,
  McpError,
  SetLevelRequestSchema,
  RELATED_TASK_META_KEY,
  type JSONRPCMessage,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { toolNames, toolOf } from '../core/index.js'
import { ConfigError, DurableHarnessError, InvalidIdError } from '../errors/index.js'
import type { Harness } from '../harness/defineHarness.js'
import type { HarnessHost } from '../harness/host.js'
import { acceptPrincipal, type Authorize, type CanAccess, type Principal } from '../http/handler.js'
import { errorResponse, json, readJson } from '../http/json.js'
import type { Question } from '../log/index.js'
import { answerElicitations } from './elicitation.js'
import { IDEMPOTENCY_KEY_META } from './clientCall.js'
import { describeTool } from './listing.js'
import { elicitationForm, toolResultOf } from './results.js'
import { originRefusal } from './origin.js'
import { callIdOfTask, elicitationId, mcpSessionId } from './taskIds.js'
import { awaitTask, getTask, listTasks, startTask, type TaskScope } from './tasks.js'

/** Options of `createMcpServer`: the host and harness it serves, which tools, and who may call (`authorize`, `canAccess`). */
export interface McpServerOptions<P extends Principal = Principal> {
  host: HarnessHost
  harness: Harness
  /** The tools served, by name (default: every tool of the harness). */
  tools?: readonly string[]
  /** Required: who sends a request; only an object is a principal (401 otherwise), and its `id` (or `sub`, `email`, `name`) scopes its tasks. */
  authorize: Authorize<P>
  /** May this principal use this session (its MCP session, `mcp.<harness>.<key>`)? `false` refuses with 403. */
  canAccess?: CanAccess<P>
  /** The server's name and version in `initialize` (default: the harness's name and version). */
  name?: string
  version?: string
  /** The poll interval tasks suggest to clients (default 1,000 ms). */
  pollIntervalMs?: number
  /** The Host headers (`host:port`) the server answers; another gets 403 (DNS rebinding). Default: any. */
  allowedHosts?: readonly string[]
  /**
   * The origins (`scheme://host:port`) a browser's request may come from; another gets 403 (MCP's
   * Origin check). Default: only the server's own (the origin the Host header names). A request
   * without an Origin header (not sent by a browser) is not checked.
   */
  allowedOrigins?: readonly string[]
}

/**
 * The capabilities every request's server states: tools, tasks for tools/call with list and cancel;
 * logging and completions are taken and have nothing to give (a durable call logs to the host's logger,
 * and no argument of a tool has completions).
 */
const CAPABILITIES = {
  tools: { listChanged: false },
  tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
  logging: {},
  completions: {},
}

/**
 * A Fetch-API handler (Request → Response) that speaks MCP over Streamable HTTP: `tools/list`, a
 * `tools/call` run as a durable call (`runTool`), and a task-augmented `tools/call` that returns its
 * task at once, answered by `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` from Redis by
 * any process. Stateless: no MCP session lives in a process. Mount it like `createHarnessHandler`
 * (`toNodeListener` from durable-harness/http for node:http).
 */
export function createMcpServer<P extends Principal>(options: McpServerOptions<P>): (request: Request) => Promise<Response> {
  if (typeof options?.authorize !== 'function')
    throw new ConfigError(
      'createMcpServer: `authorize(request)` is required, so that no endpoint is open by accident. Return the principal (an object with an `id`); anything else refuses the request with 401.',
    )
  if (!options.host || !options.harness) throw new ConfigError('createMcpServer: `host` and `harness` are required.')
  if (options.canAccess !== undefined && typeof options.canAccess !== 'function')
    throw new ConfigError('createMcpServer: `canAccess` must be a function (principal, sessionId) => boolean.')
  const { host, harness } = options
  const served = options.tools ?? toolNames(harness)
  const unknown = served.filter((name) => !toolOf(harness, name))
  if (unknown.length > 0)
    throw new ConfigError(
      `createMcpServer: no tool ${unknown.map((n) => JSON.stringify(n)).join(', ')} in harness "${harness.name}"; its tools: ${toolNames(harness).join(', ')}.`,
    )
  const listing = served.map((name) => describeTool(harness, name))
  const pollIntervalMs = options.pollIntervalMs ?? 1_000

  return async (request) => {
    try {
      const refused = originRefusal(request, options.allowedHosts, options.allowedOrigins)
      if (refused) return refused
      const principal = acceptPrincipal<P>(await options.authorize(request))
      if (!principal) return json({ error: 'Unauthorized.', code: 'unauthorized' }, 401, { 'WWW-Authenticate': 'Bearer' })
      const sessionId = mcpSessionId(harness.name, principal)
      if (!sessionId)
        return json(
          { error: 'The principal has no id (id, sub, email or name): MCP calls are kept per principal.', code: 'forbidden' },
          403,
        )
      if (options.canAccess && !(await options.canAccess(principal, sessionId)))
        return json({ error: `No access to session ${sessionId}.`, code: 'forbidden' }, 403)
      const scope: TaskScope = { session: host.open(harness, { sessionId }), pollIntervalMs }
      let parsedBody: unknown
      if (request.method === 'POST') {
        // the answers to our questions are taken here, by whichever process the client reaches
        parsedBody = await answerElicitations(scope, principal, await readJson(request), host.logger)
        if (parsedBody === undefined) return new Response(null, { status: 202 })
      }
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined })
      const server = mcpServer(options.name ?? harness.name, options.version ?? harness.version, listing, scope, transport)
      await server.connect(transport)
      request.signal.addEventListener('abort', () => void server.close(), { once: true })
      return await transport.handleRequest(request, parsedBody === undefined ? {} : { parsedBody })
    } catch (error) {
      const refused = errorResponse(error)
      if (refused) return refused
      host.logger.error({ err: error, method: request.method }, 'MCP request failed')
      return json({ error: 'Internal error; see the server log.', code: 'internal' }, 500)
    }
  }
}

/** A task id's task, or the MCP error a client gets for one it cannot see. */
async function visibleTask(scope: TaskScope, taskId: string) {
  const task = await getTask(scope, taskId)
  if (!task) throw new McpError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found')
  return task
}

/** One request's server: the handlers over the principal's scope, sending questions on `transport`. */
function mcpServer(name: string, version: string, listing: Tool[], scope: TaskScope, transport: WebStandardStreamableHTTPServerTransport) {
  const server = new Server({ name, version }, { capabilities: CAPABILITIES })
  const served = new Set(listing.map((t) => t.name))
  // a question of the call goes to the client on this request's stream; its answer may reach any process
  const ask = (requestId: string | number, taskId: string, inTask: boolean) => (q: Question) => {
    const { requestedSchema } = elicitationForm(q.schema)
    const params = { message: q.message, requestedSchema, ...(inTask ? { _meta: { [RELATED_TASK_META_KEY]: { taskId } } } : {}) }
    const message: JSONRPCMessage = { jsonrpc: '2.0', id: elicitationId(taskId, q.questionId), method: 'elicitation/create', params }
    transport.send(message, { relatedRequestId: requestId }).catch(() => {})
  }
  const result = async (taskId: string, signal: AbortSignal, onQuestion: (q: Question) => void) => {
    const landed = await awaitTask(scope, taskId, { signal, onQuestion })
    if (!landed?.result)
      throw new McpError(ErrorCode.InternalError, signal.aborted ? 'The request ended before the call.' : 'The call has no result.')
    return toolResultOf(landed.result)
  }
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing }))
  server.setRequestHandler(SetLevelRequestSchema, () => ({}))
  server.setRequestHandler(CompleteRequestSchema, () => ({ completion: { values: [], hasMore: false } }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: input = {}, task } = request.params
    if (!served.has(name)) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${JSON.stringify(name.slice(0, 100))}.`)
    // a caller's idempotency key (mcpTools sends one) names the call: its retry is the same call
    const key = request.params._meta?.[IDEMPOTENCY_KEY_META]
    const taskId = await startTask(scope, name, input, typeof key === 'string' ? key : undefined).catch(refusal)
    if (task) return { task: await visibleTask(scope, taskId) }
    return result(taskId, extra.signal, ask(extra.requestId, taskId, false))
  })
  server.setRequestHandler(GetTaskRequestSchema, async (request) => visibleTask(scope, request.params.taskId))
  server.setRequestHandler(GetTaskPayloadRequestSchema, async (request, extra) => {
    const { taskId } = await visibleTask(scope, request.params.taskId)
    const landed = await result(taskId, extra.signal, ask(extra.requestId, taskId, true))
    return { ...landed, _meta: { ...landed._meta, [RELATED_TASK_META_KEY]: { taskId } } }
  })
  server.setRequestHandler(ListTasksRequestSchema, async (request) => listTasks(scope, request.params?.cursor).catch(refusal))
  server.setRequestHandler(CancelTaskRequestSchema, async (request) => {
    const task = await visibleTask(scope, request.params.taskId)
    if (['completed', 'failed', 'cancelled'].includes(task.status))
      throw new McpError(ErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${task.status}`)
    if (!(await scope.session.cancelCall(callIdOfTask(task.taskId)!, 'Cancelled by the MCP client.'))) {
      const now = await visibleTask(scope, task.taskId)
      if (now.status === 'cancelled') return now
      // a durable call ends only where it waits: an attempt running a step is never cut mid side effect
      throw new McpError(
        ErrorCode.InvalidRequest,
        `Task ${task.taskId} is ${now.status === 'working' ? 'running a step' : now.status}: a call is cancelled while it waits (a sleep, a question, an event). Try again, or let it finish.`,
      )
    }
    return visibleTask(scope, task.taskId)
  })
  return server
}

/** A bad input or id as the client's error (what it sent, not a server fault). */
function refusal(error: unknown): never {
  if (error instanceof InvalidIdError || error instanceof DurableHarnessError) throw new McpError(ErrorCode.InvalidParams, error.message)
  throw error
}
