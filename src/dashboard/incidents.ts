// The dashboard's incident view (issue 27): turns by status (failed by default), each with Rerun and
// Abort, a bulk Rerun of every turn shown and a bulk Abort (both behind a confirmation), and Pause /
// Resume of each harness. Every action runs behind authorize (the app's middleware) and canAccess
// (per session; a bulk action skips the sessions the principal may not use); pause and resume of a
// whole harness need canOperate. Each action records the principal (principalId).
import type { Context, Hono } from 'hono'
import { html } from 'hono/html'
import type { HarnessHost } from '../harness/host.js'
import { byPrincipal, type Principal } from '../http/handler.js'
import { TURN_STATUSES } from '../log/index.js'
import type { TurnSummary } from '../ops/index.js'

/** What the request's principal may do: canAccess and canOperate bound to it by the app's middleware. */
export interface Permissions {
  access(sessionId: string): Promise<boolean>
  operate(): Promise<boolean>
}

/** The dashboard's Hono variables: who asks, what they may do, and whether this request is an operator's queue action (queues.ts). */
export type Env = { Variables: { principal: Principal; may: Permissions; operation: boolean } }

export interface IncidentDeps {
  host: HarnessHost
  base: string
  layout(title: string, body: ReturnType<typeof html>): ReturnType<typeof html>
}

const BULK_BATCH = 100
const when = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19)

function filterOf(c: Context<Env>) {
  const asked = c.req.query('status')
  const harness = c.req.query('harness') || undefined
  const sinceMin = Number(c.req.query('sinceMin') ?? '')
  return {
    status: TURN_STATUSES.find((s) => s === asked) ?? 'failed',
    ...(harness ? { harness } : {}),
    ...(Number.isFinite(sinceMin) && sinceMin > 0 ? { since: Date.now() - sinceMin * 60_000 } : {}),
  }
}

export function mountIncidents(app: Hono<Env>, deps: IncidentDeps): void {
  const { host, base } = deps
  const path = (sessionId: string, inputId: string, op: string) =>
    `${base}/sessions/${encodeURIComponent(sessionId)}/turns/${encodeURIComponent(inputId)}/${op}`
  const visible = async (c: Context<Env>, turns: TurnSummary[]) => {
    const ok = await Promise.all(turns.map((t) => c.get('may').access(t.sessionId)))
    return turns.filter((_, i) => ok[i])
  }

  app.get('/assets/incidents.js', (c) => c.body(INCIDENTS_JS, 200, { 'content-type': 'text/javascript; charset=utf-8' }))
  app.get('/turns', async (c) => {
    const filter = filterOf(c)
    const cursor = c.req.query('cursor')
    const page = await host.turns({ ...filter, limit: 100, ...(cursor ? { cursor } : {}) })
    const turns = await visible(c, page.items)
    const query = new URLSearchParams({ status: filter.status, ...(filter.harness ? { harness: filter.harness } : {}) })
    if (c.req.query('sinceMin')) query.set('sinceMin', c.req.query('sinceMin')!)
    const bulk = `${base}/turns/bulk?${query.toString()}`
    const harnesses = [...new Set(host.queues().map((q) => q.harness))]
    const paused = await Promise.all(harnesses.map((h) => host.paused(h)))
    const rows = turns.map(
      (t) =>
        html`<tr data-turn="${t.inputId}">
          <td><a href="${base}/sessions/${encodeURIComponent(t.sessionId)}">${t.sessionId}</a></td>
          <td><code>${t.inputId}</code></td>
          <td>${t.harness}</td>
          <td>${t.status}</td>
          <td>${when(t.at)}</td>
          <td>${t.principal ?? ''}</td>
          <td>${t.text.slice(0, 80)}</td>
          <td>
            ${
              t.status === 'failed' || t.status === 'aborted'
                ? html`<form class="op" data-action="${path(t.sessionId, t.inputId, 'rerun')}">
                    <button>Rerun</button><span class="status"></span>
                  </form>`
                : ''
            }
            ${
              t.status === 'open'
                ? html`<form class="op" data-action="${path(t.sessionId, t.inputId, 'abort')}">
                    <button>Abort</button><span class="status"></span>
                  </form>`
                : ''
            }
          </td>
        </tr>`,
    )
    const body = html`<h1>Turns</h1>
      <form method="get" action="${base}/turns" class="filter">
        <select name="status">
          ${TURN_STATUSES.map((s) => html`<option value="${s}" ${s === filter.status ? 'selected' : ''}>${s}</option>`)}
        </select>
        <input name="harness" placeholder="harness" value="${filter.harness ?? ''}" />
        <input name="sinceMin" placeholder="since (minutes ago)" value="${c.req.query('sinceMin') ?? ''}" />
        <button>Show</button>
      </form>
      <div class="harnesses">
        ${harnesses.map(
          (h, i) =>
            html`<form class="op" data-action="${base}/harnesses/${encodeURIComponent(h)}/${paused[i] ? 'resume' : 'pause'}">
              <b>${h}</b> ${paused[i] ? html`<em>paused</em>` : ''}<button>${paused[i] ? 'Resume' : 'Pause'}</button
              ><span class="status"></span>
            </form>`,
        )}
      </div>
      ${
        filter.status === 'failed' || filter.status === 'aborted'
          ? html`<form class="op bulk" data-action="${bulk}&op=rerun" data-confirm="Rerun every ${filter.status} turn of this filter?">
              <button>Rerun all ${filter.status}</button><span class="status"></span>
            </form>`
          : ''
      }
      ${
        filter.status === 'open'
          ? html`<form class="op bulk" data-action="${bulk}&op=abort" data-confirm="Abort every open turn of this filter?">
              <button>Abort all open</button><span class="status"></span>
            </form>`
          : ''
      }
      ${
        turns.length === 0
          ? html`<p class="muted">No ${filter.status} turns.</p>`
          : html`<table id="turns">
              <tr>
                <th>Session</th>
                <th>Input</th>
                <th>Harness</th>
                <th>Status</th>
                <th>Since (UTC)</th>
                <th>By</th>
                <th>Prompt</th>
                <th></th>
              </tr>
              ${rows}
            </table>`
      }
      ${page.cursor ? html`<p><a href="${base}/turns?${query.toString()}&cursor=${page.cursor}">More</a></p>` : ''}
      <script src="${base}/assets/incidents.js"></script>`
    return c.html(deps.layout('Turns', body))
  })

  const sessionFor = async (c: Context<Env>) => {
    const sessionId = c.req.param('id') ?? ''
    if (!(await c.get('may').access(sessionId))) return { refused: c.json({ error: 'Forbidden.', code: 'forbidden' }, 403) }
    const session = await host.find(sessionId)
    if (!session) return { refused: c.json({ error: `No session ${sessionId} of this host's harnesses.`, code: 'not_found' }, 404) }
    return { session }
  }
  app.post('/sessions/:id/turns/:inputId/rerun', async (c) => {
    const { session, refused } = await sessionFor(c)
    if (!session) return refused
    return c.json({ rerun: await session.rerun(c.req.param('inputId'), byPrincipal(c.get('principal'))) })
  })
  app.post('/sessions/:id/turns/:inputId/abort', async (c) => {
    const { session, refused } = await sessionFor(c)
    if (!session) return refused
    return c.json({ aborted: await session.abort(c.req.param('inputId'), 'Aborted from the dashboard.', byPrincipal(c.get('principal'))) })
  })
  // bulk: page by page through the filter, each turn the principal may use
  app.post('/turns/bulk', async (c) => {
    const op = c.req.query('op')
    const filter = filterOf(c)
    if ((op !== 'rerun' && op !== 'abort') || (op === 'rerun') === (filter.status === 'open'))
      return c.json({ error: 'op=rerun takes failed or aborted turns, op=abort open ones.', code: 'bad_request' }, 400)
    const by = byPrincipal(c.get('principal'))
    let count = 0
    let cursor: string | undefined
    do {
      const page = await host.turns({ ...filter, limit: BULK_BATCH, ...(cursor ? { cursor } : {}) })
      for (const t of await visible(c, page.items)) {
        const session = await host.find(t.sessionId)
        if (!session) continue
        const done = op === 'rerun' ? await session.rerun(t.inputId, by) : await session.abort(t.inputId, 'Aborted from the dashboard.', by)
        if (done) count++
      }
      cursor = page.cursor
    } while (cursor)
    return c.json({ count })
  })
  for (const op of ['pause', 'resume'] as const)
    app.post(`/harnesses/:name/${op}`, async (c) => {
      if (!(await c.get('may').operate()))
        return c.json({ error: 'Forbidden: pausing a harness needs canOperate.', code: 'forbidden' }, 403)
      const name = c.req.param('name')
      if (!host.queues().some((q) => q.harness === name))
        return c.json({ error: `No harness ${name} on this host.`, code: 'not_found' }, 404)
      await host[op](name)
      return c.json({ [op === 'pause' ? 'paused' : 'resumed']: true })
    })
}

// The incident view's script: each form.op POSTs to its data-action (after a confirm() when it has
// data-confirm) and shows the answer; values reach the page through textContent only.
const INCIDENTS_JS = String.raw`
(() => {
  document.addEventListener('submit', async (event) => {
    const form = event.target.closest('form.op')
    if (!form) return
    event.preventDefault()
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return
    const status = form.querySelector('.status')
    status.textContent = 'Sending…'
    const response = await fetch(form.dataset.action, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    const body = await response.json().catch(() => ({}))
    if (!response.ok) return void (status.textContent = body.error || 'Refused (' + response.status + ').')
    form.querySelector('button').disabled = true
    status.textContent = 'count' in body ? 'Done: ' + body.count + ' turns.' : Object.entries(body).map(([k, v]) => k + ': ' + v).join(', ')
  })
})()
`
