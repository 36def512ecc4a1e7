import { Hono, type Context } from 'hono'
import { streamSSE } from 'hono/streaming'
import { ConfigError, DurableHarnessError, QuestionClosedError } from '../errors/index.js'
import type { HarnessHost } from '../harness/host.js'
import { openEvents } from '../http/sse.js'
import { acceptPrincipal, byPrincipal, type Authorize, type CanAccess, type Principal } from '../http/handler.js'
import { metricsText } from '../telemetry/index.js'
import { Timeline } from '../timeline/items.js'
import { CLIENT_JS, CSS } from './client.js'
import { layout, questionList, questionsPage, sessionPage, sessionsPage } from './pages.js'
import { schedulesPage } from './schedulesPage.js'
import { limitsPage } from './limitsPage.js'
import { USAGE_DAYS, usagePage } from './usagePage.js'
import { agentSessions, treeSection } from './treeView.js'
import { hostRefusal, originRefusal, tokenExchange, tokenPrincipal } from './guard.js'
import { mountQueueViews } from './queues.js'
import { mountIncidents, type Env, type Permissions } from './incidents.js'
import type { Session } from '../harness/session.js'
import { isRecord } from '../log/index.js'

/** Options of `createDashboard`: the host it shows, who may use it (`authorize`) and which sessions (`canAccess`). */
export interface DashboardOptions<P extends Principal = Principal> {
  host: HarnessHost
  /**
   * As for createHarnessHandler: decides who sends each request (anything but a principal object: 401).
   * Required unless `token` is given instead.
   */
  authorize?: Authorize<P>
  /**
   * Instead of `authorize`: a shared secret each request carries as `Authorization: Bearer <token>` or
   * the HttpOnly `dh_token` cookie; opening a page with `?token=<token>` sets the cookie and strips it.
   */
  token?: string
  /** May this principal see and answer this session (and its jobs in the queue views)? Default: yes. */
  canAccess?: CanAccess<P>
  /**
   * May this principal retry, promote, clean, empty, pause and resume jobs in the queue views? Default:
   * no one. Adding jobs and editing their data are refused for everyone.
   */
  canOperate?: (principal: P) => boolean | Promise<boolean>
  /** The Host headers (host:port) the dashboard answers; another gets 403 (DNS rebinding). Default: any. */
  allowedHosts?: readonly string[]
  /** Origins besides the dashboard's own whose pages may send POST/PUT/PATCH/DELETE (a proxy's public origin). */
  allowedOrigins?: readonly string[]
  /** Where the dashboard is mounted (default ''): its links and the queue views use it. */
  basePath?: string
}

const HEARTBEAT_MS = 15_000

/**
 * The operators' web dashboard as a Hono app: recent sessions, a session's live timeline (its events
 * over SSE, as timeline lines), open questions and approvals with forms generated from their JSON
 * Schema (answering wakes the tool), bull-board's queue views, and Prometheus metrics at /metrics.
 * Every request goes through the Host check (`allowedHosts`), the Origin check (any method but
 * GET/HEAD), then the same `authorize` and `canAccess` as createHarnessHandler, the queue views too.
 *
 * @example
 * ```ts
 * import { serve } from '@hono/node-server'
 * import { createDashboard } from 'durable-harness/dashboard'
 *
 * const dashboard = createDashboard({
 *   host,
 *   authorize: (request) => (request.headers.get('authorization') === `Bearer ${process.env.OPS_TOKEN}` ? { role: 'ops' } : null),
 * })
 * serve({ fetch: dashboard.fetch, port: 8080 })
 * ```
 */
export function createDashboard<P extends Principal>(options: DashboardOptions<P>): Hono<Env> {
  const { token } = options ?? {}
  if ((typeof options?.authorize === 'function') === (typeof token === 'string' && token !== ''))
    throw new ConfigError(
      'createDashboard: pass one of `authorize(request)` and `token` (a non-empty string), so that the dashboard is not open by accident.',
    )
  const { host } = options
  const base = options.basePath ?? ''
  const { authorize, canAccess, canOperate } = options
  // with `token` there is no authorize to name P: the token holder is the principal canAccess and canOperate get (docs/operations.md)
  const principalOf = async (request: Request): Promise<P | undefined> =>
    token ? acceptPrincipal(tokenPrincipal(request, token) as P | null) : authorize ? acceptPrincipal(await authorize(request)) : undefined
  // bound here, where the principal still has the type the options' functions take
  const permissions = (principal: P): Permissions => ({
    access: async (sessionId) => (canAccess ? canAccess(principal, sessionId) : true),
    operate: async () => (canOperate ? (await canOperate(principal)) === true : false),
  })
  const app = new Hono<Env>()

  app.use('*', async (c, next) => {
    const refused =
      hostRefusal(c, options.allowedHosts) ??
      originRefusal(c, options.allowedOrigins ?? []) ??
      (token ? await tokenExchange(c, token, base) : undefined)
    if (refused) return refused
    const principal = await principalOf(c.req.raw)
    if (!principal) return c.json({ error: 'Unauthorized.', code: 'unauthorized' }, 401)
    c.set('principal', principal)
    c.set('may', permissions(principal))
    await next()
  })
  app.onError((error, c) => {
    if (error instanceof DurableHarnessError)
      return c.json({ error: error.message, code: error.code }, error instanceof QuestionClosedError ? 409 : 400)
    host.logger.error({ err: error, url: c.req.url }, 'dashboard request failed')
    return c.json({ error: 'Internal error; see the server log.', code: 'internal' }, 500)
  })

  const allowed = (c: Context<Env>, sessionId: string) => c.get('may').access(sessionId)
  /** The session of `:id`, when the principal may use it; a refusal or an unknown session ends the request. */
  const sessionOf = async (c: Context<Env>) => {
    const sessionId = c.req.param('id') ?? ''
    if (!(await allowed(c, sessionId))) return { refused: c.json({ error: 'Forbidden.', code: 'forbidden' }, 403) }
    const session = await host.find(sessionId)
    if (!session) return { refused: c.json({ error: `No session ${sessionId} of this host's harnesses.`, code: 'not_found' }, 404) }
    return { session }
  }
  const visible = async <T extends { sessionId: string }>(c: Context<Env>, items: T[]) => {
    const ok = await Promise.all(items.map((i) => allowed(c, i.sessionId)))
    return items.filter((_, n) => ok[n])
  }

  app.get('/assets/dashboard.js', (c) => c.body(CLIENT_JS, 200, { 'content-type': 'text/javascript; charset=utf-8' }))
  app.get('/assets/dashboard.css', (c) => c.body(CSS, 200, { 'content-type': 'text/css; charset=utf-8' }))

  app.get('/', async (c) => {
    const filter = { open: c.req.query('open') === '1', harness: c.req.query('harness') ?? '' }
    const sessions = await host.sessions({ limit: 100, open: filter.open, ...(filter.harness ? { harness: filter.harness } : {}) })
    return c.html(layout(base, 'Sessions', sessionsPage(base, await visible(c, sessions), filter)))
  })
  app.get('/questions', async (c) => {
    const questions = await visible(c, await host.questions({ limit: 200, sealed: 'mask' }))
    return c.html(layout(base, 'Questions', questionsPage(base, questions)))
  })
  app.get('/schedules', async (c) => {
    // a schedule is shown to a principal who may see the session it prompts
    const schedules = await visible(c, await host.schedules())
    return c.html(layout(base, 'Schedules', schedulesPage(base, schedules)))
  })
  app.get('/sessions/:id', async (c) => {
    const { session, refused } = await sessionOf(c)
    if (!session) return refused
    const questions = (await session.questions({ sealed: 'mask' })).map((q) => ({ ...q, sessionId: session.sessionId }))
    const tree = await host.tree(session.sessionId)
    // a child agent's subtree is drawn only where the principal may see its session (canAccess)
    const agents = [...new Set(agentSessions(tree))]
    const may = await Promise.all(agents.map((id) => allowed(c, id)))
    const visible = new Set(agents.filter((_, i) => may[i]))
    const page = sessionPage(
      base,
      session.sessionId,
      questions,
      await pausedTurns(session),
      treeSection(base, tree, (id) => visible.has(id)),
    )
    return c.html(layout(base, `Session ${session.sessionId}`, page, session.sessionId))
  })
  app.get('/sessions/:id/questions', async (c) => {
    const { session, refused } = await sessionOf(c)
    if (!session) return refused
    const questions = (await session.questions({ sealed: 'mask' })).map((q) => ({ ...q, sessionId: session.sessionId }))
    return c.html(questionList(base, questions))
  })
  // the session's events (session.events(), resumable by Last-Event-ID) as timeline lines
  app.get('/sessions/:id/timeline', async (c) => {
    const { session, refused } = await sessionOf(c)
    if (!session) return refused
    const from = c.req.header('last-event-id') || undefined
    const reader = new AbortController()
    // the catch-up's first read happens here, so a bad Last-Event-ID is a 400 and not an empty stream
    // a value this dashboard has no key for reads as [encrypted] (docs/encryption.md)
    const events = await openEvents(session, { from, signal: reader.signal, sealed: 'mask' })
    return streamSSE(c, async (stream) => {
      // a comment line now and then keeps proxies from closing a quiet stream
      const heartbeat = setInterval(() => void stream.write(': ping\n\n').catch(() => {}), HEARTBEAT_MS)
      stream.onAbort(() => {
        clearInterval(heartbeat)
        reader.abort()
      })
      const timeline = new Timeline()
      for await (const event of events) {
        for (const item of timeline.push(event)) await stream.writeSSE({ id: item.cursor, data: JSON.stringify(item) })
      }
    })
  })
  app.post('/sessions/:id/questions/:questionId/answer', async (c) => {
    const { session, refused } = await sessionOf(c)
    if (!session) return refused
    if (!c.req.header('content-type')?.startsWith('application/json'))
      return c.json({ error: 'Send the answer as JSON (content-type: application/json).', code: 'bad_request' }, 415)
    const value: unknown = await c.req.json().catch(() => undefined)
    if (value === undefined) return c.json({ error: 'The body is not JSON.', code: 'bad_request' }, 400)
    await session.answer(c.req.param('questionId'), value, byPrincipal(c.get('principal')))
    return c.json({ ok: true })
  })
  app.post('/sessions/:id/turns/:inputId/resume', async (c) => {
    const { session, refused } = await sessionOf(c)
    if (!session) return refused
    return c.json({ resumed: await session.resume(c.req.param('inputId')) })
  })
  // the model's context: session.compact() and session.reset(note) with the principal on the record (docs/compaction.md)
  app.post('/sessions/:id/compact', async (c) => {
    const { session, refused } = await sessionOf(c)
    if (!session) return refused
    return c.json(await session.compact(byPrincipal(c.get('principal'))))
  })
  app.post('/sessions/:id/reset', async (c) => {
    const { session, refused } = await sessionOf(c)
    if (!session) return refused
    const body: unknown = await c.req.json().catch(() => ({}))
    const note = typeof body === 'object' && body !== null ? Reflect.get(body, 'note') : undefined
    if (note !== undefined && typeof note !== 'string')
      return c.json({ error: 'The note must be a string (what the model sees in place of the conversation).', code: 'bad_request' }, 400)
    return c.json({ reset: true, ...(await session.reset(note || undefined, byPrincipal(c.get('principal')))) })
  })
  // this process's Prometheus metrics, with the host's open work and queue depths read now
  app.get('/metrics', async (c) => {
    const { contentType, body } = await metricsText(host)
    return c.body(body, 200, { 'content-type': contentType })
  })
  // every limit's keys (tenants, users) across all sessions: for operators only
  app.get('/limits', async (c) => {
    if (!(await c.get('may').operate()))
      return c.json({ error: 'Forbidden: the limits page is for operators (canOperate).', code: 'forbidden' }, 403)
    return c.html(layout(base, 'Limits', limitsPage((await host.stats()).limits)))
  })
  // the deployment's spend across all sessions (host.usage): for operators only
  app.get('/usage', async (c) => {
    if (!(await c.get('may').operate()))
      return c.json({ error: 'Forbidden: the usage page is for operators (canOperate).', code: 'forbidden' }, 403)
    // since the first of the last USAGE_DAYS UTC days (host.usage sums whole days)
    const since = Date.now() - (USAGE_DAYS - 1) * 86_400_000
    return c.html(layout(base, 'Usage', usagePage(await host.usage({ since }), USAGE_DAYS)))
  })
  mountIncidents(app, { host, base, layout: (title, body) => layout(base, title, body) })
  mountQueueViews(
    app,
    host,
    base,
    async (c) => ({ access: c.get('may').access, operator: await c.get('may').operate() }),
    canOperate !== undefined,
  )
  return app
}

/** The session's turns paused by onExhausted 'pause' (not resumed, not settled since), with the error that paused them. */
async function pausedTurns(session: Session): Promise<Array<{ inputId: string; error: string }>> {
  const paused = new Map<string, string>()
  // a turn's paused reason this dashboard has no key for reads as [encrypted]
  for (const entry of await session.log.conversation({ sealed: 'mask' })) {
    if (isRecord(entry, 'harness.turn.paused')) paused.set(entry.record.inputId, entry.record.error.message)
    else if (isRecord(entry, 'harness.turn.resumed') || isRecord(entry, 'harness.input.settled')) paused.delete(entry.record.inputId)
  }
  return [...paused].map(([inputId, error]) => ({ inputId, error }))
}
