// Where an MCP caller's calls live: one session a (harness, principal), so every task id names a call
// that only its principal's session can hold (docs/mcp.md "Sessions and task ids").
import { createHash, randomBytes } from 'node:crypto'
import { wholePrincipalId } from '../harness/tags.js'

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('base64url')

/** A harness name (`[A-Za-z0-9._/-]`) without '.' or '/', one to one: `_` → `__`, `.` → `_d`, `/` → `_s`. */
const escapedName = (name: string) => name.replace(/[_./]/g, (c) => (c === '_' ? '__' : c === '.' ? '_d' : '_s'))

/**
 * The session an MCP principal's calls run in: `mcp.<harness>.<key>`, neither part holding a '.', so
 * two (harness, principal) pairs never share a session. The harness is its escaped name; the key is `p`
 * + the principal's id in base64url (one to one). Past a session id's 200 characters the key is `h` +
 * the id's SHA-256, then the harness `_h` + its name's (a form no escaped name takes). Undefined for a
 * principal with no id: such a caller's calls could not be told apart from another's.
 */
export function mcpSessionId(harness: string, principal: object): string | undefined {
  const id = wholePrincipalId(principal)
  if (id === undefined) return undefined
  const name = escapedName(harness)
  const plain = `mcp.${name}.p${Buffer.from(id, 'utf8').toString('base64url')}`
  if (plain.length <= 200) return plain
  const hashedKey = `mcp.${name}.h${sha256(id)}`
  return hashedKey.length <= 200 ? hashedKey : `mcp._h${sha256(harness)}.h${sha256(id)}`
}

// `<ms base 36>-<16>` (a new task) or `k<22>` (one a caller's idempotency key named)
const TASK_ID = /^(?:[0-9a-z]{1,11}-[A-Za-z0-9_-]{16}|k[A-Za-z0-9_-]{22})$/
const CALL_PREFIX = 'mcp-'

/** A new task id: its creation time (base 36 ms) and 96 random bits. */
export function newTaskId(now = Date.now()): string {
  return `${now.toString(36)}-${randomBytes(12).toString('base64url')}`
}

/**
 * The task id of a call a caller named by its idempotency key (`_meta` of tools/call, as mcpTools sends
 * it): its SHA-256, so the caller's retry after a crash is the same call, not a second one.
 */
export function keyedTaskId(key: string): string {
  return `k${sha256(key).slice(0, 22)}`
}

/** The tool call a task id names, or undefined for a string that is not a task id (never keyed). */
export function callIdOfTask(taskId: unknown): string | undefined {
  return typeof taskId === 'string' && TASK_ID.test(taskId) ? `${CALL_PREFIX}${taskId}` : undefined
}

/** The task id of an MCP call's tool call id, or undefined for a call that is not an MCP task. */
export function taskIdOfCall(toolCallId: string): string | undefined {
  const taskId = toolCallId.startsWith(CALL_PREFIX) ? toolCallId.slice(CALL_PREFIX.length) : ''
  return TASK_ID.test(taskId) ? taskId : undefined
}

/** When a task was created (ms), from its id; undefined for a keyed one (its id holds no time). */
export function createdAtOf(taskId: string): number | undefined {
  const cut = taskId.indexOf('-')
  return taskId.startsWith('k') || cut < 0 ? undefined : parseInt(taskId.slice(0, cut), 36)
}

/** The JSON-RPC id of the elicitation request for a question of a task: any server reads its answer back. */
export function elicitationId(taskId: string, questionId: string): string {
  return `dh-ask:${taskId}:${questionId}`
}

/** The task and question an elicitation response answers, or undefined for another response. */
export function parseElicitationId(id: unknown): { taskId: string; questionId: string } | undefined {
  if (typeof id !== 'string' || !id.startsWith('dh-ask:')) return undefined
  const rest = id.slice('dh-ask:'.length)
  const cut = rest.indexOf(':')
  const taskId = rest.slice(0, cut)
  const questionId = rest.slice(cut + 1)
  return cut > 0 && TASK_ID.test(taskId) && /^[A-Za-z0-9._-]{1,200}$/.test(questionId) ? { taskId, questionId } : undefined
}
