// MCP tasks as durable calls: a task is a runTool call of the principal's MCP session, so every
// answer (get, result, list, cancel) is read from Redis by whichever server the client reaches (R27).
import { ToolCallError, WaitTimeoutError } from '../errors/index.js'
import type { Session } from '../harness/session.js'
import type { CallStanding } from '../harness/logReader.js'
import { streamIdMs, type Question } from '../log/index.js'
import type { Task } from '@modelcontextprotocol/sdk/types.js'
import { callIdOfTask, createdAtOf, keyedTaskId, newTaskId, taskIdOfCall } from './taskIds.js'

/** The tasks one principal may see: its session of the served harness. */
export interface TaskScope {
  session: Session
  pollIntervalMs: number
}

const iso = (ms: number) => new Date(ms).toISOString()

/** Starts the call of a new task; resolves once it is logged and queued (its result comes later). */
export async function startTask(scope: TaskScope, name: string, input: unknown, key?: string): Promise<string> {
  const taskId = key === undefined ? newTaskId() : keyedTaskId(key)
  await scope.session.runTool({ name, input, toolCallId: callIdOfTask(taskId)! }, { timeoutMs: 0 }).catch((error: unknown) => {
    // still running (the usual case), or landed already as a tool error (a quick call started on this
    // process's lane): either way the call is logged, and its outcome is the task's to read
    if (!(error instanceof WaitTimeoutError) && !(error instanceof ToolCallError)) throw error
  })
  return taskId
}

/** The open questions of a task's call, oldest first. */
export async function openQuestionsOf(scope: TaskScope, taskId: string): Promise<Question[]> {
  const toolCallId = callIdOfTask(taskId)
  return (await scope.session.questions()).filter((q) => q.toolCallId === toolCallId)
}

/** The task as MCP shows it, from its call's standing; null for a task this scope does not hold. */
export async function getTask(scope: TaskScope, taskId: string): Promise<Task | null> {
  const toolCallId = callIdOfTask(taskId)
  const standing = toolCallId && (await scope.session.log.call(toolCallId))
  if (!standing) return null
  return taskOf(scope, taskId, standing, standing.status === 'parked' ? (await openQuestionsOf(scope, taskId)).length > 0 : false)
}

function taskOf(scope: TaskScope, taskId: string, standing: CallStanding, asking: boolean): Task {
  const landedAt = standing.resultEntryId ? streamIdMs(standing.resultEntryId) : undefined
  // a keyed task's id holds no time: it reads as created when it landed (or now)
  const createdAt = createdAtOf(taskId) ?? landedAt ?? Date.now()
  const error = standing.result?.error
  const base = { taskId, ttl: null, createdAt: iso(createdAt), pollInterval: scope.pollIntervalMs }
  if (standing.status !== 'done') {
    return { ...base, status: asking ? 'input_required' : 'working', lastUpdatedAt: iso(createdAt) }
  }
  const lastUpdatedAt = iso(landedAt ?? createdAt)
  if (!error) return { ...base, status: 'completed', lastUpdatedAt }
  return { ...base, status: error.code === 'cancelled' ? 'cancelled' : 'failed', statusMessage: error.message, lastUpdatedAt }
}

const PAGE = 50

/**
 * The scope's tasks, oldest first, a page at a time: the MCP calls its session's log requested after
 * the cursor (a log entry id). Malformed cursors are refused by the log's own check.
 */
export async function listTasks(scope: TaskScope, cursor: string | undefined): Promise<{ tasks: Task[]; nextCursor?: string }> {
  const entries = await scope.session.log.read({ types: ['harness.tool.requested'], limit: PAGE, ...(cursor ? { after: cursor } : {}) })
  const tasks: Task[] = []
  for (const { record } of entries) {
    const taskId = record.type === 'harness.tool.requested' ? taskIdOfCall(String(record.toolCallId)) : undefined
    const task = taskId && (await getTask(scope, taskId))
    if (task) tasks.push(task)
  }
  return { tasks, ...(entries.length === PAGE ? { nextCursor: entries.at(-1)!.id } : {}) }
}

/**
 * Waits until the task's call lands and returns its kept result record; each question the call asks
 * meanwhile (open when the wait starts, or asked later) is handed to `onQuestion` once. Follows the
 * session's log for the call's asks and result (woken by each write, from any process) and looks at
 * the call's standing each `recheckMs` too, so a record it missed cannot strand it.
 */
export async function awaitTask(
  scope: TaskScope,
  taskId: string,
  options: { signal: AbortSignal; onQuestion(question: Question): void; recheckMs?: number },
): Promise<CallStanding | null> {
  const toolCallId = callIdOfTask(taskId)!
  const asked = new Set<string>()
  const offer = (q: Question) => {
    if (q.toolCallId !== toolCallId || asked.has(q.questionId)) return
    asked.add(q.questionId)
    options.onQuestion(q)
  }
  const stop = new AbortController()
  const onAbort = () => stop.abort()
  options.signal.addEventListener('abort', onAbort, { once: true })
  // from a little before now: a record written between the first look and the follow's start is read
  const after = `${Date.now() - 60_000}-0`
  const follow = scope.session.log.follow({
    after,
    types: ['harness.tool.ask', 'harness.tool.result'],
    signal: stop.signal,
    blockMs: 2_000,
  })
  let landed: CallStanding | null = null
  const look = async (): Promise<boolean> => {
    const standing = await scope.session.log.call(toolCallId)
    if (!standing || standing.status === 'done') {
      landed = standing
      stop.abort()
      return true
    }
    if (standing.status === 'parked') for (const q of await openQuestionsOf(scope, taskId)) offer(q)
    return false
  }
  const recheck = setInterval(() => void look().catch(() => {}), options.recheckMs ?? 5_000)
  try {
    if (await look()) return landed
    for await (const { record } of follow) {
      // a question read from the log may be answered already: the open ones are looked up again
      if (
        (record.type === 'harness.tool.ask' || record.type === 'harness.tool.result') &&
        record.toolCallId === toolCallId &&
        (await look())
      )
        break
    }
    if (!landed && !options.signal.aborted) await look()
    return landed
  } finally {
    clearInterval(recheck)
    options.signal.removeEventListener('abort', onAbort)
    stop.abort()
  }
}
