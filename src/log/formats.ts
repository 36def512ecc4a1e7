/**
 * Every string format that carries ids between processes, built and parsed here only: members of
 * the open-work indexes, keys of pub/sub messages, and BullMQ job ids. Ids are safe by the time they
 * get here (validated, or stored call ids: see callIds.ts), so `|` and `\n` cannot occur in them.
 */

/** Member of the open turns / calls / questions indexes: `<sessionId>|<id>`. */
export function openMember(sessionId: string, id: string): string {
  return `${sessionId}|${id}`
}

export function parseMember(member: string): { sessionId: string; id: string } {
  const bar = member.indexOf('|')
  return { sessionId: member.slice(0, bar), id: member.slice(bar + 1) }
}

/**
 * A pub/sub message on the events channel is `<key>\n<record JSON>`: `call|<sid>|<toolCallId>` with
 * the landed harness.tool.result, `input|<sid>|<inputId>` with the harness.input.settled record,
 * `cancel|<sid>|<toolCallId>` with the reason a fan-out's child was cancelled (its running attempt stops).
 */
export type MessageKind = 'call' | 'input' | 'cancel'

export function messageKey(kind: MessageKind, sessionId: string, id: string): string {
  return `${kind}|${openMember(sessionId, id)}`
}

export interface Message {
  key: string
  kind: MessageKind | null
  sessionId: string
  id: string
  /** The record the message carries, as JSON text ('' for none). */
  payload: string
}

/** Never throws: a message of another shape parses with `kind: null`. */
export function parseMessage(message: string): Message {
  const nl = message.indexOf('\n')
  const key = nl < 0 ? message : message.slice(0, nl)
  const payload = nl < 0 ? '' : message.slice(nl + 1)
  const bar = key.indexOf('|')
  const kind = key.slice(0, bar)
  const { sessionId, id } = parseMember(key.slice(bar + 1))
  return { key, kind: kind === 'call' || kind === 'input' || kind === 'cancel' ? kind : null, sessionId, id, payload }
}

/** BullMQ job id of a turn (BullMQ refuses ':' in ids). */
export function turnJobId(sessionId: string, inputId: string): string {
  return `turn|${sessionId}|${inputId}`
}

/** BullMQ job id of a tool call; base64url keeps any id a job id can hold. */
export function toolJobId(sessionId: string, toolCallId: string): string {
  return `call|${sessionId}|${Buffer.from(toolCallId).toString('base64url')}`
}

/** The session a job id of ours names (`turn|<sid>|…`, `call|<sid>|…`); undefined for any other id. */
export function sessionOfJobId(jobId: string | undefined): string | undefined {
  const [kind, sessionId, rest] = (jobId ?? '').split('|', 3)
  return (kind === 'turn' || kind === 'call') && sessionId && rest !== undefined ? sessionId : undefined
}

/** The session and call a tool job's id names; null for an id of another shape. */
export function parseToolJobId(jobId: string): { sessionId: string; toolCallId: string } | null {
  const match = /^call\|([^|]+)\|([A-Za-z0-9_-]+)$/.exec(jobId)
  if (!match) return null
  const ids = { sessionId: match[1]!, toolCallId: Buffer.from(match[2]!, 'base64url').toString() }
  // only the id toolJobId makes (base64url has other spellings of the same bytes)
  return toolJobId(ids.sessionId, ids.toolCallId) === jobId ? ids : null
}
