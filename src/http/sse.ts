import type { Logger } from 'pino'
import type { SessionEvent } from '../events/follow.js'

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
