import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import { costliestFirst, USAGE_COLUMNS, usageCells, type HostUsage } from '../harness/hostUsage.js'

type Figures = HostUsage['total']

/** The days the Usage page sums, today's included. */
export const USAGE_DAYS = 30

function rows(groups: Array<[string, Figures]>) {
  return groups.map(
    ([name, f]) =>
      html`<tr>
        <td>${name || '(none)'}</td>
        ${usageCells(f).map((cell) => html`<td>${cell}</td>`)}
      </tr>`,
  )
}

/** One table of a grouping, the costliest first. */
function grouped(title: string, label: string, groups: Record<string, Figures>, order: 'cost' | 'name') {
  const sorted = Object.entries(groups)
    .filter(([, f]) => f.calls > 0)
    .sort((a, b) => (order === 'name' ? a[0].localeCompare(b[0]) : costliestFirst(a, b)))
  return html`<h2>${title}</h2>
    <table>
      <thead>
        <tr>
          <th>${label}</th>
          ${USAGE_COLUMNS.map((h) => html`<th>${h}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${
          sorted.length
            ? rows(sorted)
            : html`<tr>
                <td colspan="${USAGE_COLUMNS.length + 1}" class="muted">No model call in these days.</td>
              </tr>`
        }
      </tbody>
    </table>`
}

/**
 * The spend page (host.usage, docs/spend.md): the last `days` UTC days in all, by model, by principal
 * and by day. Model and principal names are a caller's or a provider's: hono's html tag escapes them.
 */
export function usagePage(spend: HostUsage, days: number): HtmlEscapedString | Promise<HtmlEscapedString> {
  return html`<h1>Usage</h1>
    <p class="muted">Model call tries of the last ${days} days (UTC), failed and estimated ones included (docs/spend.md).</p>
    ${grouped('In all', 'Spend', { all: spend.total }, 'name')} ${grouped('By model', 'Model', spend.byModel, 'cost')}
    ${grouped('By principal', 'Principal', spend.byPrincipal, 'cost')} ${grouped('By day', 'Day', spend.byDay, 'name')}`
}
