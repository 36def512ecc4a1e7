// A session's events as a server-sent event stream: read with the cursor checked before the response
// starts, a run's events cut out of the session's, and written as `text/event-stream` with heartbeats.
import { EventType } from '@tanstack/ai'
import type { Logger } from 'pino'
import type { Session } from '../harness/session.js'
import type { SessionEvent } from '../events/follow.js'

/**
 * The session's events after `from` (without one: from the record of input `fromInput`, or from the
 * session's start): what is there, then new ones as they come when `follow`. The first read happens
 * before this resolves, so a bad cursor throws here (a 400) and not in the middle of a response that
 * has started.
 */
export async function openEvents(
  session: Session,
  options: { from?: string | undefined; fromInput?: string; signal: AbortSignal; follow?: boolean; sealed?: 'throw' | 'mask' },
): Promise<AsyncGenerator<SessionEvent>> {
  const { from, signal, follow = true } = options
  const sealed = options.sealed ? { sealed: options.sealed } : {}
  const start = from ? { from } : options.fromInput ? { fromInput: options.fromInput } : {}
  const there = session.events({ ...start, ...sealed, signal, follow: false })
  const first = await there.next()
  return (async function* () {
    let last = from
    try {
      for (let step = first; !step.done; step = await there.next()) {
        last = step.value.cursor
        yield step.value
      }
    } finally {
      await there.return(undefined)
    }
    // exactly once: the follower starts right after the last event the catch-up gave
    if (follow && !signal.aborted) yield* session.events({ ...(last ? { from: last } : start), ...sealed, signal })
  })()
}

const isRunEvent = (event: SessionEvent['event']): event is Extract<SessionEvent['event'], { runId: string }> =>
  event.type === 'RUN_STARTED' || event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR'

/**
 * For a chat client: a model call cut mid-stream (its worker died) left a partial message in the
 * client. Its `harness.model.retry` marker and the cut message's end become one MESSAGES_SNAPSHOT of
 * the thread as the log has it, which drops the partial text; the retried call then streams anew, so
 * the client ends with one answer. (`GET events` keeps the marker: a follower there sees both.)
 */
export async function* snapshotOnRetry(
  events: AsyncIterable<SessionEvent>,
  messages: () => Promise<unknown[]>,
): AsyncGenerator<SessionEvent> {
  let retried = false
  for await (const entry of events) {
    const { event } = entry
    if (event.type === 'CUSTOM' && event.name === 'harness.model.retry') {
      retried = true
      continue
    }
    if (retried && event.type === 'TEXT_MESSAGE_END') {
      // the cut message's end: its cursor resumes after both, so a reconnect does not see them again
      retried = false
      yield { cursor: entry.cursor, event: { type: EventType.MESSAGES_SNAPSHOT, messages: (await messages()) as never } }
      continue
    }
    yield entry
  }
}

/**
 * The events of one run (turn): from its RUN_STARTED to its RUN_FINISHED or RUN_ERROR, which ends it.
 * `inside`: the events start within the run (a resume after one of its cursors). Another run's
 * RUN_* events are left out; events without a run id in between are the run's (turns of a session
 * run one after another; if two overlap, their text and tool events cannot be told apart).
 */
export async function* runEvents(events: AsyncIterable<SessionEvent>, runId: string, inside = false): AsyncGenerator<SessionEvent> {
  let mine = inside
  for await (const entry of events) {
    const { event } = entry
    if (isRunEvent(event)) {
      if (event.runId !== runId) continue
      if (event.type === 'RUN_STARTED') mine = true
    }
    if (!mine) continue
    yield entry
    if (isRunEvent(event) && event.type !== 'RUN_STARTED') return
  }
}

const encoder = new TextEncoder()

/**
 * One SSE event: the cursor as its `id:` (a reconnect sends it back as Last-Event-ID), the AG-UI chunk
 * as data. An event of the handler's own (an interrupt) has no cursor and no id.
 */
function sseFrame({ cursor, event }: SessionEvent): string {
  return `${cursor ? `id: ${cursor}\n` : ''}data: ${JSON.stringify(event)}\n\n`
}

/**
 * A `text/event-stream` response of `events`, read as the client takes them (backpressure), with a
 * comment line every `heartbeatMs`. It ends when `events` ends; when the client goes away, `reader`
 * aborts, which stops the reading. A read that fails (Redis gone) errors the body, so the client
 * sees a cut stream and reconnects from its last id.
 */
export function sseResponse(
  events: AsyncGenerator<SessionEvent>,
  reader: AbortController,
  options: { heartbeatMs: number; logger: Logger },
): Response {
  let heartbeat: NodeJS.Timeout | undefined
  let open = true
  const stop = () => {
    open = false
    clearInterval(heartbeat)
    reader.abort()
  }
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      heartbeat = setInterval(() => {
        if (open) controller.enqueue(encoder.encode(': ping\n\n'))
      }, options.heartbeatMs)
      heartbeat.unref()
      controller.enqueue(encoder.encode(': connected\n\n'))
    },
    async pull(controller) {
      try {
        const step = await events.next()
        if (!open) return
        if (step.done) {
          stop()
          controller.close()
        } else controller.enqueue(encoder.encode(sseFrame(step.value)))
      } catch (error) {
        if (!open) return
        options.logger.warn({ err: error }, 'an event stream failed; the client reconnects from its last event id')
        stop()
        controller.error(error)
      }
    },
    cancel() {
      stop()
      // not awaited: it runs after a read in flight, which the abort ends
      events.return(undefined).catch(() => {})
    },
  })
  return new Response(body, {
    headers: {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    },
  })
}
