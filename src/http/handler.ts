import { ConfigError } from '../errors/index.js'
import { routeContext, type RouteContext } from './context.js'
import { getSnapshot, postControl } from './control.js'
import { getEvents } from './eventsRoute.js'
import { errorResponse, json } from './responses.js'
import { getRun, postRun } from './run.js'
import { acceptPrincipal, type HarnessHandlerOptions, type Principal } from './types.js'

type Route = (ctx: RouteContext) => Promise<Response>

// by the last segment of the path: the handler answers wherever it is mounted (see docs/connect.md)
const ROUTES: Record<string, Partial<Record<string, Route>>> = {
  run: { POST: postRun, GET: getRun },
  events: { GET: getEvents },
  control: { POST: postControl },
  snapshot: { GET: getSnapshot },
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
