import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { CallToolResultSchema, CreateTaskResultSchema, ResultSchema, type Task } from '@modelcontextprotocol/sdk/types.js'
import type { DurableToolContext } from '../tool/index.js'
import { errorMessageOf, McpToolError, outcomeOf, type McpOutcome, type ModelValue } from './clientResult.js'

/**
 * The `_meta` key that carries a call's idempotency key to the MCP server. A prefix of one label of
 * our own: valid by the spec's key rules, and outside the prefixes MCP reserves (`io.modelcontextprotocol/`,
 * `dev.mcp/`, any with `modelcontextprotocol` or `mcp` as a label).
 */
export const IDEMPOTENCY_KEY_META = 'durable-harness/idempotencyKey'

/** The first wait between polls of a task whose server suggests none. */
const DEFAULT_POLL_MS = 1_000
/** No wait below this, whatever the server suggests: each poll is a park and two log records. */
const MIN_POLL_MS = 250
/** Waits double up to this (or the server's own interval, if longer): a long task costs few polls. */
const MAX_POLL_MS = 60_000

/** How one MCP tool is called: its name, and whether as a task (with the ttl to ask for). */
export interface McpCallPlan {
  name: string
  task: false | { ttlMs: number }
}

/**
 * One call of an MCP tool from a durable tool's execute: the request is a step whose idempotency key
 * travels in `_meta`, so a run again after a crash re-sends the same key; a task is polled with a
 * step per read and a durable sleep between (the call parks: no worker slot). Resolves with the value
 * the model reads; throws McpToolError for an error result, and the SDK's McpError for a JSON-RPC error.
 */
export async function callMcpTool(client: Client, plan: McpCallPlan, input: unknown, ctx: DurableToolContext): Promise<ModelValue> {
  const outcome = plan.task
    ? await callAsTask(client, plan.name, plan.task.ttlMs, input, ctx)
    : await callOnce(client, plan.name, input, ctx)
  // thrown after the step, not in it: the error is stored as the step's value, and a run again throws it again
  if (outcome.isError) throw new McpToolError(plan.name, errorMessageOf(outcome, plan.name))
  return outcome.value
}

function callOnce(client: Client, name: string, input: unknown, ctx: DurableToolContext): Promise<McpOutcome> {
  return ctx.step.do(`mcp:${name}`, async ({ idempotencyKey }) =>
    outcomeOf(await client.callTool(requestParams(name, input, idempotencyKey), CallToolResultSchema, requestOptions(ctx))),
  )
}

/** What the creating step keeps: the task to poll, or the result of a server that answered at once. */
type Created = { taskId: string; poll: TaskPoll } | { outcome: McpOutcome }

/** What a poll keeps of `tasks/get` (and the creation of its task). */
interface TaskPoll {
  status: Task['status']
  pollInterval?: number
  statusMessage?: string
}

async function callAsTask(client: Client, name: string, ttlMs: number, input: unknown, ctx: DurableToolContext): Promise<McpOutcome> {
  const { step } = ctx
  const created: Created = await step.do(`mcp:${name}`, async ({ idempotencyKey }) => {
    const reply = await client.request({ method: 'tools/call', params: requestParams(name, input, idempotencyKey) }, ResultSchema, {
      ...requestOptions(ctx),
      task: { ttl: ttlMs },
    })
    const task = CreateTaskResultSchema.safeParse(reply)
    // a server may answer a task-augmented request with the result itself
    if (!task.success) return { outcome: outcomeOf(CallToolResultSchema.parse(reply)) }
    return { taskId: task.data.task.taskId, poll: pollOf(task.data.task) }
  })
  if ('outcome' in created) return created.outcome
  const { taskId } = created
  let poll = created.poll
  // the loop runs again from the top at each wake: its stored reads and elapsed sleeps return at once
  for (let n = 1; poll.status === 'working'; n++) {
    await step.sleep(`poll:${n}`, pollWait(n, poll.pollInterval))
    poll = await step.do(`status:${n}`, async () => pollOf(await client.experimental.tasks.getTask(taskId, requestOptions(ctx))))
  }
  if (poll.status === 'cancelled') {
    return {
      isError: true,
      value: `The MCP task ${taskId} of ${name} was cancelled${poll.statusMessage ? `: ${poll.statusMessage}` : '.'}`,
    }
  }
  // completed or failed: the stored result; input_required: tasks/result hands the server's requests to
  // the client's own handlers (elicitation, sampling) and answers when the task ends
  return step.do('result', async () => {
    try {
      return outcomeOf(await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, requestOptions(ctx)))
    } catch (error) {
      if (poll.status !== 'failed') throw error
      const why = poll.statusMessage ?? (error instanceof Error ? error.message : String(error))
      return { isError: true, value: `The MCP task ${taskId} of ${name} failed: ${why}` }
    }
  })
}

/** The wait before poll n: the server's interval, doubling each poll up to a minute (or the server's interval if longer). */
function pollWait(n: number, suggested: number | undefined): number {
  const base = Math.max(suggested ?? DEFAULT_POLL_MS, MIN_POLL_MS)
  return Math.min(base * 2 ** (n - 1), Math.max(base, MAX_POLL_MS))
}

function pollOf(task: Task): TaskPoll {
  return {
    status: task.status,
    ...(task.pollInterval !== undefined ? { pollInterval: task.pollInterval } : {}),
    ...(task.statusMessage !== undefined ? { statusMessage: task.statusMessage } : {}),
  }
}

function requestParams(name: string, input: unknown, idempotencyKey: string) {
  return {
    name,
    ...(isRecord(input) ? { arguments: input } : {}),
    _meta: { [IDEMPOTENCY_KEY_META]: idempotencyKey },
  }
}

/** The call's abort (its time limit, its turn's end) cancels the request on the server too. */
function requestOptions(ctx: DurableToolContext): { signal?: AbortSignal } {
  return ctx.abortSignal ? { signal: ctx.abortSignal } : {}
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
