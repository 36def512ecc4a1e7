import type { Logger } from 'pino'
import { HttpError } from './responses.js'
import type { Session } from '../harness/session.js'
import type { Harness } from '../harnessTypes.js'
import type { SendEventOptions, SendEventResult } from '../harness/machineEvents.js'
import type { HarnessHandlerOptions, Principal } from './types.js'

/** What a route gets: the request, its URL, and the sessions the principal may use. */
export interface RouteContext {
  request: Request
  url: URL
  logger: Logger
  heartbeatMs: number
  /** The harness the handler serves (its tools: which calls need approval). */
  harness: Harness
  /**
   * The thread's session, if the principal may use it (else 403). `existing`: a thread with nothing
   * in its log is a 404 (every route but the ones that prompt).
   */
  open(threadId: string, options: { existing: boolean }): Promise<Session>
  /** Aborts when the client goes away (request.signal) or the response body is cancelled. */
  reader: AbortController
  /** host.sendEvent, if the principal may send this event (`canSendEvent`; without one every event is refused with 403). */
  sendEvent(event: SendEventOptions): Promise<SendEventResult>
}

export function routeContext<P extends Principal>(
  options: HarnessHandlerOptions<P>,
  request: Request,
  principal: P,
  heartbeatMs: number,
): RouteContext {
  const { host, harness } = options
  const reader = new AbortController()
  if (request.signal.aborted) reader.abort()
  else request.signal.addEventListener('abort', () => reader.abort(), { once: true })
  return {
    request,
    url: new URL(request.url),
    logger: host.logger,
    heartbeatMs,
    harness,
    reader,
    async open(threadId, { existing }) {
      if (options.canAccess && !(await options.canAccess(principal, threadId)))
        throw new HttpError(403, `No access to thread ${threadId}.`, 'forbidden')
      const session = host.open(harness, { sessionId: threadId })
      if (existing && (await session.log.read({ limit: 1 })).length === 0)
        throw new HttpError(404, `Unknown thread ${threadId}.`, 'unknown_thread')
      return session
    },
    async sendEvent(event) {
      if (!options.canSendEvent || !(await options.canSendEvent(principal, { event: event.event, key: event.key })))
        throw new HttpError(
          403,
          `No permission to send event ${JSON.stringify(event.event)}` +
            (options.canSendEvent ? '.' : ': the handler has no canSendEvent option (events wake calls of every thread).'),
          'forbidden',
        )
      return host.sendEvent(event)
    },
  }
}

/**
 * The cursor a reconnecting client sends (Last-Event-ID), else the one in the query. An empty one is
 * none (a client that has no event yet may send the header empty), as is `-1` in the query.
 */
export function resumeCursor(ctx: RouteContext, query: string): string | undefined {
  const header = ctx.request.headers.get('Last-Event-ID')
  if (header) return header
  const fromQuery = ctx.url.searchParams.get(query)
  return fromQuery && fromQuery !== '-1' ? fromQuery : undefined
}
