import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import type { ScheduleInfo } from '../harness/schedules.js'

const when = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19))

/** The schedules (host.schedules()): every value through hono's html tag, which escapes it. */
export function schedulesPage(base: string, schedules: ScheduleInfo[]): HtmlEscapedString | Promise<HtmlEscapedString> {
  const rows = schedules.map(
    (s) =>
      html`<tr>
        <td>${s.id}</td>
        <td>${s.harness}</td>
        <td>${s.every !== undefined ? `every ${s.every / 1000} s` : `${s.cron} (${s.tz ?? 'UTC'})`}</td>
        <td><a href="${base}/sessions/${encodeURIComponent(s.sessionId)}">${s.sessionId}</a></td>
        <td>${s.overlap}</td>
        <td>${when(s.next)}</td>
        <td>${s.prompted}</td>
        <td>${s.skipped}</td>
        <td>${s.lastError ? `${when(s.lastError.at)}: ${s.lastError.message}` : '-'}</td>
        <td>${s.prompt}</td>
      </tr>`,
  )
  return html`<h1>Schedules</h1>
    ${
      schedules.length === 0
        ? html`<p class="muted">No schedules.</p>`
        : html`<table id="schedules">
            <thead>
              <tr>
                <th>Schedule</th>
                <th>Harness</th>
                <th>When</th>
                <th>Session</th>
                <th>Overlap</th>
                <th>Next tick (UTC)</th>
                <th>Prompted</th>
                <th>Skipped</th>
                <th>Last error (UTC)</th>
                <th>Prompt</th>
              </tr>
            </thead>
            <tbody>
              ${rows}
            </tbody>
          </table>`
    }`
}
