import { EventType, type StreamChunk } from '@tanstack/ai'
import { toolMessageContent } from '../core/index.js'
import { isHarnessRecord, type LogRecord, type RecordOf } from '../log/index.js'
import type { LiveEntry } from '../log/live.js'

/** The live message a follower is in the middle of, and how much of its text it has. */
export interface MessageState {
  message: string
  emitted: number
}

/**
 * Turns log records and live entries into AG-UI events (`@tanstack/ai` StreamChunks), in the order a
 * follower reads them. A message streamed live is opened by its first delta and closed by its logged
 * response, which adds whatever text the follower has not seen (all of it when the deltas expired or
 * the follower joined late): each character reaches a follower once. A retried model call streams
 * under a new message id: the old message is closed after a `harness.model.retry` marker.
 */
export class EventMapper {
  constructor(
    private readonly sessionId: string,
    public state: MessageState,
  ) {}

  fromLive(entry: LiveEntry): StreamChunk[] {
    if (entry.k === 'custom') {
      const from = entry.toolCallId !== undefined ? { toolCallId: entry.toolCallId } : { inputId: entry.inputId }
      return [{ type: EventType.CUSTOM, name: entry.name, value: entry.value, metadata: from }]
    }
    const out: StreamChunk[] = []
    if (this.state.message !== entry.m) {
      out.push(...this.closeAsRetried(), { type: EventType.TEXT_MESSAGE_START, messageId: entry.m, role: 'assistant' })
      this.state = { message: entry.m, emitted: 0 }
    }
    const fresh = entry.text.slice(Math.max(0, this.state.emitted - entry.at))
    if (fresh.length > 0 && entry.at <= this.state.emitted) {
      out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: entry.m, delta: fresh })
      this.state = { message: entry.m, emitted: entry.at + entry.text.length }
    }
    return out
  }

  fromLog(record: LogRecord, entryId: string): StreamChunk[] {
    // app records: as they are logged
    if (!isHarnessRecord(record)) return [{ type: EventType.CUSTOM, name: record.type, value: record }]
    const threadId = this.sessionId
    switch (record.type) {
      case 'harness.input':
        return [
          { type: EventType.RUN_STARTED, threadId, runId: record.inputId },
          {
            type: EventType.CUSTOM,
            name: 'harness.input',
            value: {
              inputId: record.inputId,
              text: record.text,
              ...(record.principal !== undefined ? { principal: record.principal } : {}),
              ...(record.metadata ? { metadata: record.metadata } : {}),
            },
          },
        ]
      case 'harness.model.response':
        return this.response(record, entryId)
      case 'harness.tool.result':
        return [
          {
            type: EventType.TOOL_CALL_RESULT,
            toolCallId: record.toolCallId,
            messageId: `result-${record.toolCallId}`,
            role: 'tool',
            content: toolMessageContent(record),
          },
        ]
      case 'harness.input.settled': {
        const run = { threadId, runId: record.inputId }
        return record.outcome === 'completed'
          ? [{ type: EventType.RUN_FINISHED, ...run, ...(record.text !== undefined ? { result: record.text } : {}) }]
          : [
              {
                type: EventType.RUN_ERROR,
                ...run,
                message: record.error?.message ?? `Turn ${record.outcome}.`,
                code: record.error?.code ?? record.outcome,
                // who ended it (an abort's principal): the timeline shows `by <id>`
                ...(record.principal !== undefined ? { metadata: { principal: record.principal } } : {}),
              },
            ]
      }
      // steps, sleeps, questions, answers, parks, turn records and recoveries: as they are logged
      case 'harness.tool.requested':
      case 'harness.tool.started':
      case 'harness.tool.step':
      case 'harness.tool.step.retry':
      case 'harness.tool.sleep':
      case 'harness.tool.wait':
      case 'harness.tool.event':
      case 'harness.tool.ask':
      case 'harness.tool.answer':
      case 'harness.tool.suspended':
      case 'harness.turn.retry':
      case 'harness.turn.paused':
      case 'harness.turn.resumed':
      case 'harness.turn.finish':
      case 'harness.turn.rerun':
      case 'harness.compaction':
      case 'harness.recovery':
      case 'harness.fork':
      case 'harness.usage':
      case 'harness.budget.exceeded':
        return [{ type: EventType.CUSTOM, name: record.type, value: record }]
    }
  }

  private response(record: RecordOf<'harness.model.response'>, entryId: string): StreamChunk[] {
    const out: StreamChunk[] = []
    const text = record.text ?? ''
    if (record.messageId && this.state.message === record.messageId) {
      const rest = text.slice(this.state.emitted)
      if (rest) out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: record.messageId, delta: rest })
      out.push({ type: EventType.TEXT_MESSAGE_END, messageId: record.messageId })
    } else {
      out.push(...this.closeAsRetried())
      if (text) {
        const messageId = record.messageId ?? `message-${entryId}`
        out.push(
          { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' },
          { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: text },
          { type: EventType.TEXT_MESSAGE_END, messageId },
        )
      }
    }
    this.state = { message: '', emitted: 0 }
    for (const call of record.toolCalls) {
      out.push(
        { type: EventType.TOOL_CALL_START, toolCallId: call.toolCallId, toolCallName: call.name, toolName: call.name },
        { type: EventType.TOOL_CALL_ARGS, toolCallId: call.toolCallId, delta: JSON.stringify(call.input ?? {}) },
        { type: EventType.TOOL_CALL_END, toolCallId: call.toolCallId, input: call.input },
      )
    }
    return out
  }

  /** Closes a message whose model call was cut (a crash mid-stream): a new attempt streams again. */
  private closeAsRetried(): StreamChunk[] {
    if (!this.state.message) return []
    const messageId = this.state.message
    this.state = { message: '', emitted: 0 }
    return [
      { type: EventType.CUSTOM, name: 'harness.model.retry', value: { messageId } },
      { type: EventType.TEXT_MESSAGE_END, messageId },
    ]
  }
}
