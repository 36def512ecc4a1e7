import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import type { HostUsage } from '../harness/hostUsage.js'

type Figures = HostUsage['total']

const HEADS = ['Calls', 'Input', 'Output', 'Cached', 'Cache write', 'Reasoning', 'Cost (USD)', 'Estimated']
const count = (n: number) => n.toLocaleString('en-US')

function rows(groups: Array<[string, Figures]>) {
  return groups.map(
    ([name, f]) =>
      html`<tr>
        <td>${name || '(none)'}</td>
        <td>${count(f.calls)}</td>
        <td>${count(f.promptTokens)}</td>
        <td>${count(f.completionTokens)}</td>
        <td>${count(f.cachedTokens)}</td>
        <td>${count(f.cacheWriteTokens)}</td>
        <td>${count(f.reasoningTokens)}</td>
        <td>${f.cost.toFixed(4)}</td>
        <td>${count(f.estimatedCalls)}</td>
      </tr>`,
  )
}

/** One table of a grouping, the costliest first. */
function grouped(title: string, label: string, groups: Record<string, Figures>, order: 'cost' | 'name') {
  const sorted = Object.entries(groups)
    .filter(([, f]) => f.calls > 0)
    .sort(([a, fa], [b, fb]) => (order === 'name' ? a.localeCompare(b) : fb.cost - fa.cost || fb.totalTokens - fa.totalTokens))
  return html`<h2>${title}</h2>
    <table>
      <thead>
        <tr>
          <th>${label}</th>
          ${HEADS.map((h) => html`<th>${h}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${
          sorted.length
            ? rows(sorted)
            : html`<tr>
                <td colspan="9" class="muted">No model call in these days.</td>
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
