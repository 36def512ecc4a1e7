import { randomUUID } from 'node:crypto'
import { ForkError, UnknownInputError } from '../errors/index.js'
import {
  assertInputId,
  assertSessionId,
  isRecord,
  writeFork,
  type InputState,
  type LogEntry,
  type LogRecord,
  type SessionLog,
} from '../log/index.js'
import { checkPrincipal } from './tags.js'

/** `host.fork(sessionId, options)`: where the copy ends, and the new session's id. */
export interface ForkOptions {
  /** Copy the turns before this input's (not it). */
  before?: string
  /** Copy the turns through this input's (it included). Neither: every turn. */
  through?: string
  /** The new session's id (default `fork-<uuid>`); it must not exist yet. */
  sessionId?: string
  /** Who forked: on the new session's harness.fork record. */
  principal?: string
}

const KEYS = new Set(['before', 'through', 'sessionId', 'principal'])

/**
 * host.fork (docs/compaction.md, "Fork"): a new session whose conversation is the source's up to
 * `before` / `through`. The copied turns' inputs, model responses, tool results, settles, turn records
 * and the compactions of those turns are written into the new session under their source stream ids,
 * settled: nothing of them runs again (their calls landed their results; the fork's new calls have new
 * ids, so new idempotency keys). The source is only read. The new log ends with a harness.fork record
 * naming the source. Refused (ForkError, nothing written) when a copied turn is not settled (it runs,
 * waits in line, or has a parked or open call) or the new session exists.
 */
export async function forkSession(source: SessionLog, logFor: (sessionId: string) => SessionLog, options: ForkOptions): Promise<string> {
  const sourceId = source.sessionId
  if (typeof options !== 'object' || options === null)
    throw new ForkError(sourceId, 'the options must be an object { before?, through?, sessionId? }')
  const unknown = Object.keys(options).filter((k) => !KEYS.has(k))
  if (unknown.length > 0)
    throw new ForkError(sourceId, `unknown option ${unknown.map((k) => JSON.stringify(k)).join(', ')}; it takes ${[...KEYS].join(', ')}`)
  const { before, through } = options
  if (before !== undefined && through !== undefined) throw new ForkError(sourceId, 'give before or through, not both')
  if (before !== undefined) assertInputId(before)
  if (through !== undefined) assertInputId(through)
  if (options.principal !== undefined) checkPrincipal(options.principal)
  const sessionId = options.sessionId ?? `fork-${randomUUID()}`
  assertSessionId(sessionId)
  if (sessionId === sourceId) throw new ForkError(sourceId, 'the new session must have another id')

  const conversation = await source.inputs.conversation()
  const order: string[] = []
  for (const entry of conversation)
    if (isRecord(entry, 'harness.input') && !order.includes(entry.record.inputId)) order.push(entry.record.inputId)
  if (order.length === 0) throw new ForkError(sourceId, 'it has no turn (no session of that id, or nothing prompted yet)')
  const mark = before ?? through
  const at = mark === undefined ? order.length : order.indexOf(mark)
  if (at < 0) throw new UnknownInputError(mark!)
  const copied = order.slice(0, through !== undefined ? at + 1 : at)

  const inputs: Array<[string, InputState]> = []
  let harness = ''
  for (const inputId of copied) {
    const state = await source.inputs.getInput(inputId)
    if (!state || state.status !== 'settled')
      throw new ForkError(
        sourceId,
        `its turn ${inputId} is not settled (it runs, waits in line, or has a parked or open call); fork before it, or when it settled`,
      )
    harness ||= state.harness
    // the fork's copy answers no parent call and waits for nothing
    const { parent: _parent, paused: _paused, steerInto: _steerInto, ...kept } = state
    inputs.push([inputId, kept])
  }
  const entries = copiedEntries(conversation, new Set(copied))
  const record: LogRecord = {
    type: 'harness.fork',
    from: sourceId,
    ...(before !== undefined ? { before } : {}),
    ...(through !== undefined ? { through } : {}),
    ...(entries.length > 0 ? { entryId: entries.at(-1)!.id } : {}),
    turns: copied.length,
    ...(options.principal !== undefined ? { principal: options.principal } : {}),
    at: Date.now(),
  }
  const written = await writeFork(logFor(sessionId).stream, entries, inputs, record)
  if (written.status === 'exists') throw new ForkError(sourceId, `the new session ${sessionId} exists already; give another sessionId`)
  return sessionId
}

/** The conversation entries of the copied turns: theirs by inputId, their calls' results, the compactions that cut only them. */
function copiedEntries(conversation: LogEntry[], copied: ReadonlySet<string>): LogEntry[] {
  const calls = new Set<string>()
  const compactions = new Set<string>()
  const out: LogEntry[] = []
  for (const entry of conversation) {
    const { record } = entry
    if (isRecord(entry, 'harness.tool.result')) {
      if (calls.has(entry.record.toolCallId)) out.push(entry)
    } else if (isRecord(entry, 'harness.compaction')) {
      const { through, cleared, base } = entry.record
      const inside = (ref: { inputId: string } | undefined) => ref === undefined || copied.has(ref.inputId)
      if (inside(through) && inside(cleared) && (base === undefined || compactions.has(base))) {
        compactions.add(entry.id)
        out.push(entry)
      }
    } else if ('inputId' in record && typeof record.inputId === 'string' && copied.has(record.inputId)) {
      if (isRecord(entry, 'harness.model.response')) for (const call of entry.record.toolCalls) calls.add(call.toolCallId)
      out.push(entry)
    }
  }
  return out
}
