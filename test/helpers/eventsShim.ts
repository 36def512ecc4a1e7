// TEMPORARY, until session.events lands on main: a stand-in that derives the contract's events from
// whole log records (no live deltas), so the HTTP handler's tests run. Removed at the merge.
import { Session } from '../../src/harness/session.js'
import { InvalidCursorError } from '../../src/errors.js'

type Entry = { id: string; record: any }
const events = (e: Entry, threadId: string): any[] => {
  const r = e.record
  switch (r.type) {
    case 'harness.input':
      return [{ type: 'RUN_STARTED', runId: r.inputId, threadId }]
    case 'harness.model.response':
      return [
        ...r.toolCalls.flatMap((c: any) => [
          { type: 'TOOL_CALL_START', toolCallId: c.toolCallId, toolCallName: c.name, toolName: c.name },
          { type: 'TOOL_CALL_ARGS', toolCallId: c.toolCallId, delta: JSON.stringify(c.input) },
          { type: 'TOOL_CALL_END', toolCallId: c.toolCallId },
        ]),
        ...(r.text
          ? [
              { type: 'TEXT_MESSAGE_START', messageId: `m-${e.id}`, role: 'assistant' },
              { type: 'TEXT_MESSAGE_CONTENT', messageId: `m-${e.id}`, delta: r.text },
              { type: 'TEXT_MESSAGE_END', messageId: `m-${e.id}` },
            ]
          : []),
      ]
    case 'harness.tool.result':
      return [
        {
          type: 'TOOL_CALL_RESULT',
          toolCallId: r.toolCallId,
          messageId: `r-${r.toolCallId}`,
          content: JSON.stringify(r.result ?? r.error),
        },
      ]
    case 'harness.input.settled':
      return r.outcome === 'completed'
        ? [{ type: 'RUN_FINISHED', runId: r.inputId, threadId, finishReason: 'stop' }]
        : [{ type: 'RUN_ERROR', runId: r.inputId, threadId, message: r.error?.message ?? r.outcome, code: r.error?.code }]
    default:
      return [{ type: 'CUSTOM', name: r.type.replace(/^harness\.tool\./, 'harness.'), value: r }]
  }
}

if (!('events' in Session.prototype)) {
  Object.defineProperty(Session.prototype, 'events', {
    value: async function* (this: Session, options: { from?: string; signal?: AbortSignal; follow?: boolean } = {}) {
      let [after, skip] = options.from ? options.from.split('~') : ['0-0', '-1']
      if (!/^\d+-\d+$/.test(after ?? '') || !/^-?\d+$/.test(skip ?? '')) throw new InvalidCursorError('events({ from })', options.from)
      const emit = function* (this: Session, entry: Entry) {
        const list = events(entry, this.sessionId)
        for (let i = entry.id === after ? Number(skip) + 1 : 0; i < list.length; i++) yield { cursor: `${entry.id}~${i}`, event: list[i] }
      }
      const first = after === '0-0' ? await this.log.read() : await this.log.read({ from: after })
      for (const entry of first) yield* emit.call(this, entry)
      if (options.follow === false) return
      const last = first.length ? first[first.length - 1]!.id : after!
      for await (const entry of this.log.follow({ after: last, ...(options.signal ? { signal: options.signal } : {}) }))
        yield* emit.call(this, entry)
    },
  })
}
