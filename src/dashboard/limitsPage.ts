import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import type { LimitStats } from '../ops/index.js'

/** The limits page: per limit and key, running, waiting and rate use (R17, docs/limits.md). Every value is escaped by hono's html tag. */
export function limitsPage(limits: LimitStats[]): HtmlEscapedString | Promise<HtmlEscapedString> {
  const rows = limits.map(
    (l) =>
      html`<tr>
        <td>${l.harness}</td>
        <td>${l.limit}</td>
        <td>${l.key || '-'}</td>
        <td>${l.running}</td>
        <td>${l.waiting}</td>
        <td>${l.rateUsed}</td>
      </tr>`,
  )
  return html`<h1>Limits</h1>
    <table>
      <thead>
        <tr>
          <th>Harness</th>
          <th>Limit</th>
          <th>Key</th>
          <th>Running</th>
          <th>Waiting</th>
          <th>Rate used</th>
        </tr>
      </thead>
      <tbody>
        ${
          rows.length
            ? rows
            : html`<tr>
                <td colspan="6" class="muted">No limit has been used.</td>
              </tr>`
        }
      </tbody>
    </table>`
}
