import { EventType, type StreamChunk } from '@tanstack/ai'
import type { SessionEvent } from '../events/follow.js'
import { asHarnessRecord, streamIdMs, type HarnessRecord } from '../log/index.js'

/** What a timeline line is about. */
export type TimelineKind =
  | 'input'
  | 'model'
  | 'call'
  | 'attempt'
  | 'step'
  | 'retry'
  | 'sleep'
  | 'question'
  | 'answer'
  | 'park'
  | 'result'
  | 'error'
  | 'settled'
  | 'recovery'
  | 'record'

/** One readable line of a session's timeline, made from its events (CLI `log`, the dashboard). */
export interface TimelineItem {
  /** The event's cursor: `events({ from })` resumes right after it. */
  cursor: string
  /** When it was logged (ms), from the log entry id. */
  at: number
  kind: TimelineKind
  /** The line as text (JSON values shortened); a renderer escapes it. */
  text: string
  toolCallId?: string
  inputId?: string
  /** The record or event it came from, whole. */
  detail: unknown
}

const MAX = 160

/** A JSON value on one line, cut to `max` characters. */
function short(value: unknown, max = MAX): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined')
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

function loggedAt(cursor: string): number {
  return streamIdMs(cursor) || 0
}

type Line = Omit<TimelineItem, 'cursor' | 'at' | 'detail'>

/** ` by <principal>` when a record names who did it (prompt, answer, approval, rerun, abort). */
function by(r: { principal?: unknown }): string {
  return typeof r.principal === 'string' ? ` by ${short(r.principal, 80)}` : ''
}

/** ` [k=v, ...]`: an input's operator tags. */
function tags(metadata: unknown): string {
  if (typeof metadata !== 'object' || metadata === null) return ''
  const pairs = Object.entries(metadata).map(([k, v]) => `${k}=${String(v)}`)
  return ` [${short(pairs.join(', '), 80)}]`
}

/** A harness record as a line; null for the records other events already show. */
function recordLine(r: HarnessRecord): Line | null {
  switch (r.type) {
    case 'harness.input':
      return inputLine(r)
    case 'harness.tool.started':
      return {
        kind: 'attempt',
        toolCallId: r.toolCallId,
        text: `${r.name} ${r.toolCallId} attempt ${r.attempt} (${r.reason}, replay ${r.replay}${r.version ? `, version ${short(r.version)}` : ''})`,
      }
    case 'harness.tool.step':
      return {
        kind: 'step',
        toolCallId: r.toolCallId,
        text: `${r.toolCallId} step ${r.name}${'value' in r ? ` = ${short(r.value)}` : ' done'}`,
      }
    case 'harness.tool.step.retry': {
      const next =
        typeof r.nextAt === 'number' ? `, next try at ${new Date(r.nextAt).toISOString()}` : ` (${r.final ?? 'final'}, no further try)`
      return {
        kind: 'retry',
        toolCallId: r.toolCallId,
        text: `${r.toolCallId} step ${r.name} try ${r.attempt} failed: ${short(r.error.message)}${next}`,
      }
    }
    case 'harness.tool.sleep':
      return {
        kind: 'sleep',
        toolCallId: r.toolCallId,
        text: `${r.toolCallId} sleeps (${r.name}) until ${new Date(r.wakeAt).toISOString()}`,
      }
    case 'harness.tool.wait':
      return {
        kind: 'sleep',
        toolCallId: r.toolCallId,
        text: `${r.toolCallId} waits (${r.name}) for event ${r.event} key ${r.key}${r.scope ? ' of this session' : ''} until ${new Date(r.until).toISOString()}`,
      }
    case 'harness.tool.event':
      return {
        kind: 'step',
        toolCallId: r.toolCallId,
        text: `${r.toolCallId} got event ${r.event} key ${r.key} (${r.name}) = ${short(r.payload)}`,
      }
    case 'harness.tool.ask':
      return {
        kind: 'question',
        toolCallId: r.toolCallId,
        text: `${r.toolCallId} asks${r.kind === 'approval' ? ' for approval' : ''} (${r.questionId}): ${short(r.message)}`,
      }
    case 'harness.tool.answer':
      return { kind: 'answer', toolCallId: r.toolCallId, text: `${r.toolCallId} answered (${r.questionId})${by(r)}: ${short(r.value)}` }
    case 'harness.tool.suspended':
      // a call that waits for its limit (R17) holds no slot: shown as waiting, not as a park of the tool
      if (r.kind === 'limit') return { kind: 'park', toolCallId: r.toolCallId, text: `${r.toolCallId} waiting for limit` }
      return { kind: 'park', toolCallId: r.toolCallId, text: `${r.toolCallId} parked (${r.kind})` }
    case 'harness.usage': {
      if (r.reason === 'refused') return { kind: 'record', inputId: r.inputId, text: 'model call refused by the provider: not billed' }
      const u = r.usage
      const cost = u.cost !== undefined ? `, $${u.cost.toFixed(6)}` : ''
      const counts = `${u.promptTokens} in, ${u.completionTokens} out${u.estimated ? ' (estimated)' : ''}${cost}`
      return { kind: 'record', inputId: r.inputId, text: `model call ${r.reason} counted: ${counts}` }
    }
    case 'harness.budget.exceeded': {
      const figure = (n: number) => (r.metric === 'cost' ? `$${n.toFixed(6)}` : String(n))
      const who = r.principal === undefined ? '' : ` of ${short(r.principal)}`
      return {
        kind: 'error',
        inputId: r.inputId,
        text: `${r.scope} budget${who} exceeded (${r.metric}): ${figure(r.spent)} spent + ${figure(r.held)} held + ${figure(r.estimate)} for this call > ${figure(r.max)}; the turn ${r.action === 'pause' ? 'pauses' : 'fails'}`,
      }
    }
    case 'harness.recovery':
      return {
        kind: 'recovery',
        ...(r.toolCallId ? { toolCallId: r.toolCallId } : {}),
        text: `recovery: ${r.reason} ${r.toolCallId ?? r.inputId ?? ''}`.trim(),
      }
    case 'harness.turn.retry':
      return {
        kind: 'error',
        inputId: r.inputId,
        text: `model call failed (try ${r.attempt}): ${short(r.error.message)}; again at ${new Date(r.nextAt).toISOString()}`,
      }
    case 'harness.turn.paused':
      return { kind: 'park', inputId: r.inputId, text: `turn ${r.inputId} paused: ${short(r.error.message)}` }
    case 'harness.turn.resumed':
      return { kind: 'record', inputId: r.inputId, text: `turn ${r.inputId} resumed` }
    case 'harness.turn.rerun': {
      const calls = r.calls && r.calls.length > 0 ? `; runs again: ${short(r.calls.join(', '))}` : ''
      // calls the operator named although the rerun would have kept them (a `never` call that may have done its work)
      const again = r.again && r.again.length > 0 ? ` (named: ${short(r.again.join(', '))})` : ''
      return { kind: 'record', inputId: r.inputId, text: `turn ${r.inputId} rerun (${short(r.rerunId, 60)})${by(r)}${calls}${again}` }
    }
    case 'harness.turn.finish':
      return { kind: 'model', inputId: r.inputId, text: `beforeFinish cycle ${r.cycle}: ${short(r.messages)}` }
    case 'harness.fork': {
      const at = r.before !== undefined ? ` before ${r.before}` : r.through !== undefined ? ` through ${r.through}` : ''
      return { kind: 'record', text: `forked from ${r.from}${at}${by(r)}: ${r.turns} ${r.turns === 1 ? 'turn' : 'turns'} copied` }
    }
    case 'harness.compaction': {
      if (r.strategy === 'reset' && r.reason === 'reset') {
        const note = r.summary !== undefined ? ` from the note: ${short(r.summary)}` : ''
        return {
          kind: 'record',
          text: `reset${by(r)}: the model's context starts over${note}; ~${r.tokens.before} -> ~${r.tokens.after} tokens`,
        }
      }
      const cut = r.through ? `turns through ${r.through.inputId} ${r.summary !== undefined && !r.omitted ? 'summarized' : 'left out'}` : ''
      const cleared = r.cleared ? `tool results through ${r.cleared.inputId} cleared` : ''
      const what = [cut, cleared].filter(Boolean).join(', ')
      return {
        kind: 'record',
        ...(r.inputId ? { inputId: r.inputId } : {}),
        text: `compacted (${r.strategy}, ${r.reason})${by(r)}: ${what}; ~${r.tokens.before} -> ~${r.tokens.after} tokens`,
      }
    }
    case 'harness.tool.requested':
    case 'harness.tool.result':
    case 'harness.input.settled':
    case 'harness.model.response':
      return null
  }
}

/** An input's line: from its record, or from the CUSTOM event's value that carries its fields. */
function inputLine(value: { inputId?: unknown; text?: unknown; principal?: unknown; metadata?: unknown }): Line {
  const inputId = String(value.inputId)
  return { kind: 'input', inputId, text: `input ${inputId}${by(value)}: ${short(value.text)}${tags(value.metadata)}` }
}

/**
 * A CUSTOM event as a line: a harness record (its value is the record), the input (its value is
 * `{inputId, text}`), or a tool's or an app's own event.
 */
function customLine(name: string, value: object): Line | null {
  if (name === 'harness.input') return inputLine(value)
  if (name === 'harness.model.retry') return null
  const record = asHarnessRecord(value)
  if (record?.type === name) return recordLine(record)
  if (name.startsWith('harness.')) return { kind: 'record', text: `${name} ${short(value)}` }
  return { kind: 'record', text: `record ${name}: ${short(value)}` }
}

/**
 * Turns a session's events (`session.events()`) into timeline lines: inputs, model text and tool
 * calls, attempts, steps, sleeps, questions, answers, results, settles, recoveries and app records.
 * Model text arrives in deltas; it becomes one line when its message ends.
 */
export class Timeline {
  private readonly text = new Map<string, string>()
  private readonly names = new Map<string, string>()

  push({ cursor, event }: SessionEvent): TimelineItem[] {
    const line = this.line(event)
    return line ? [{ cursor, at: loggedAt(cursor), detail: event.type === EventType.CUSTOM ? event.value : event, ...line }] : []
  }

  private line(event: StreamChunk): Line | null {
    switch (event.type) {
      case EventType.TEXT_MESSAGE_START:
        this.text.set(event.messageId, '')
        return null
      case EventType.TEXT_MESSAGE_CONTENT:
        this.text.set(event.messageId, (this.text.get(event.messageId) ?? '') + event.delta)
        return null
      case EventType.TEXT_MESSAGE_END: {
        const text = this.text.get(event.messageId)
        this.text.delete(event.messageId)
        return text ? { kind: 'model', text: `model: ${short(text)}` } : null
      }
      case EventType.TOOL_CALL_START:
        this.names.set(event.toolCallId, event.toolCallName)
        return null
      case EventType.TOOL_CALL_END:
        return {
          kind: 'call',
          toolCallId: event.toolCallId,
          text: `model calls ${this.names.get(event.toolCallId) ?? 'a tool'} ${event.toolCallId} ${short(event.input ?? {})}`,
        }
      case EventType.TOOL_CALL_RESULT: {
        const name = this.names.get(event.toolCallId) ?? 'tool'
        const failed = /^\s*\{\s*"error"/.test(event.content)
        return {
          kind: failed ? 'error' : 'result',
          toolCallId: event.toolCallId,
          text: `${name} ${event.toolCallId} → ${short(event.content)}`,
        }
      }
      case EventType.RUN_FINISHED:
        return {
          kind: 'settled',
          inputId: event.runId,
          text: `turn ${event.runId} completed${event.result ? `: ${short(event.result)}` : ''}`,
        }
      case EventType.RUN_ERROR:
        return {
          kind: 'error',
          inputId: event.runId ?? '',
          text: `turn ${event.runId ?? ''} ${event.code ?? 'failed'}${by({ principal: event.metadata?.principal })}: ${short(event.message)}`,
        }
      case EventType.CUSTOM:
        return typeof event.value === 'object' && event.value !== null ? customLine(event.name, event.value) : null
      default:
        return null
    }
  }
}
