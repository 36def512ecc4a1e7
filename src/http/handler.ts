// The one Fetch handler of durable-harness/http: its options, who may call it (authorize, canAccess,
// canSendEvent), and the context each route of routes.ts gets.
import { ConfigError } from '../errors/index.js'
import type { Harness } from '../harness/defineHarness.js'
import type { HarnessHost } from '../harness/host.js'
import { principalId } from '../harness/tags.js'
import { errorResponse, HttpError, json } from './json.js'
import { ROUTES, type RouteContext } from './routes.js'

/** Who sends a request, as `authorize` returns it: an object your `canAccess` understands (`{ id: 'u1' }`). */
export type Principal = object

/**
 * Decides who sends a request; runs first on every request. Only an object is a principal: `null`,
 * `undefined`, `false`, `0`, `''`, `true`, a string, a number or an array refuses the request with 401,
 * so `(req) => req.headers.get('authorization') === expected` refuses rather than admits.
 */
export type Authorize<P extends Principal = Principal> = (
  request: Request,
) => P | null | undefined | false | Promise<P | null | undefined | false>

/**
 * `authorize`'s answer as a principal, or undefined for a refusal: anything but a non-array object
 * refuses, so a boolean or a string check cannot admit everyone by accident.
 */
export function acceptPrincipal<P extends Principal>(answer: P | null | undefined | false): P | undefined {
  // checked at run time too: a JavaScript authorize may return anything
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return undefined
  return answer
}

/** May this principal use this thread (session)? `false` refuses the request with 403. */
export type CanAccess<P extends Principal = Principal> = (principal: P, threadId: string) => boolean | Promise<boolean>

/** Options of `createHarnessHandler`: the host and harness it serves, who may call it (`authorize`) and which threads (`canAccess`). */
export interface HarnessHandlerOptions<P extends Principal = Principal> {
  host: HarnessHost
  harness: Harness
  /** Required: no endpoint is open by accident. */
  authorize: Authorize<P>
  /** Default: every authorized principal may use every thread. */
  canAccess?: CanAccess<P>
  /**
   * May this principal send this machine event (`POST control { op: 'event' }`)? An event wakes the
   * calls of every thread waiting on it (with `sessionId`: the scoped waits of that thread), so
   * without this option every event is refused with 403.
   */
  canSendEvent?: (principal: P, event: { event: string; key: string; sessionId?: string }) => boolean | Promise<boolean>
  /** A comment line on every open SSE stream this often, so proxies keep it open (default 15 000 ms). */
  heartbeatMs?: number
}

/**
 * One Fetch-API handler (Request → Response) that serves a harness's sessions over HTTP: `POST run`
 * (AG-UI, for useChat's fetchServerSentEvents), `GET run`, `GET events` (SSE, resumable), `POST control`
 * and `GET snapshot`, under any base path. Every request is authorized first (401), then checked
 * (400), then scoped by `canAccess` (403); an unknown thread is a 404. A refused request writes nothing.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createHarnessHandler, toNodeListener } from 'durable-harness/http'
 *
 * const handler = createHarnessHandler({
 *   host,
 *   harness: assistant,
 *   authorize: (request) => users.fromBearer(request.headers.get('authorization')), // a principal object, or null: 401
 *   canAccess: (user, threadId) => threadId.startsWith(`${user.id}-`),
 * })
 * createServer(toNodeListener(handler)).listen(3000)
 * ```
 */
export function createHarnessHandler<P extends Principal>(options: HarnessHandlerOptions<P>): (request: Request) => Promise<Response> {
  if (typeof options?.authorize !== 'function')
    throw new ConfigError(
      'createHarnessHandler: `authorize(request)` is required, so that no endpoint is open by accident. ' +
        'Return the principal (an object, such as { id: userId }); anything else (null, false, a string) refuses the request with 401.',
    )
  if (!options.host || !options.harness) throw new ConfigError('createHarnessHandler: `host` and `harness` are required.')
  if (options.canAccess !== undefined && typeof options.canAccess !== 'function')
    throw new ConfigError('createHarnessHandler: `canAccess` must be a function (principal, threadId) => boolean.')
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const logger = options.host.logger

  return async (request) => {
    try {
      const principal = acceptPrincipal<P>(await options.authorize(request))
      if (!principal) return json({ error: 'Unauthorized.', code: 'unauthorized' }, 401)
      const segment = new URL(request.url).pathname.split('/').filter(Boolean).at(-1) ?? ''
      const methods = ROUTES[segment]
      if (!methods) return json({ error: `No route ${segment}: use run, events, control or snapshot.`, code: 'not_found' }, 404)
      const route = methods[request.method]
      if (!route)
        return json({ error: `Method ${request.method} not allowed on ${segment}.`, code: 'method_not_allowed' }, 405, {
          Allow: Object.keys(methods).join(', '),
        })
      return await route(routeContext(options, request, principal, heartbeatMs))
    } catch (error) {
      const refused = errorResponse(error)
      if (refused) return refused
      logger.error({ err: error, method: request.method, url: request.url }, 'harness handler failed')
      return json({ error: 'Internal error; see the server log.', code: 'internal' }, 500)
    }
  }
}

/** `{ principal }` with the principal's string id, or `{}` when it has none (nothing recorded then). */
export function byPrincipal(principal: Principal): { principal?: string } {
  const id = principalId(principal)
  return id === undefined ? {} : { principal: id }
}

/** The context of one request's route: its sessions are the ones `canAccess` lets the principal use. */
function routeContext<P extends Principal>(
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
    by: byPrincipal(principal),
    async open(threadId, { existing }) {
      if (options.canAccess && !(await options.canAccess(principal, threadId)))
        throw new HttpError(403, `No access to thread ${threadId}.`, 'forbidden')
      const session = host.open(harness, { sessionId: threadId })
      if (existing && (await session.log.read({ limit: 1 })).length === 0)
        throw new HttpError(404, `Unknown thread ${threadId}.`, 'unknown_thread')
      return session
    },
    async sendEvent(event) {
      // a session-scoped event reaches that thread's waits only: the thread's own access check comes first
      if (event.sessionId !== undefined && options.canAccess && !(await options.canAccess(principal, event.sessionId)))
        throw new HttpError(403, `No access to thread ${event.sessionId}.`, 'forbidden')
      const about = { event: event.event, key: event.key, ...(event.sessionId === undefined ? {} : { sessionId: event.sessionId }) }
      if (!options.canSendEvent || !(await options.canSendEvent(principal, about)))
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
