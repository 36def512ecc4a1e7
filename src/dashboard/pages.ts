import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import type { Question } from '../log/index.js'
import type { SessionSummary } from '../ops/index.js'
import { schemaFields } from './form.js'

type Html = HtmlEscapedString | Promise<HtmlEscapedString>
type OpenQuestion = Question & { sessionId: string }

// every value below goes through hono's html tag, which escapes it: log values are never markup
export function layout(base: string, title: string, body: Html, session?: string): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>${title} · durable-harness</title>
        <link rel="stylesheet" href="${base}/assets/dashboard.css" />
      </head>
      <body data-base="${base}" data-session="${session ?? ''}">
        <header>
          <strong>durable-harness</strong><a href="${base}/">Sessions</a><a href="${base}/questions">Questions</a
          ><a href="${base}/turns">Turns</a><a href="${base}/schedules">Schedules</a><a href="${base}/queues">Queues</a
          ><a href="${base}/limits">Limits</a><a href="${base}/usage">Usage</a><a href="${base}/metrics">Metrics</a>
        </header>
        <main>${body}</main>
        <script src="${base}/assets/dashboard.js"></script>
      </body>
    </html>`
}

const when = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19)

export function sessionsPage(base: string, sessions: SessionSummary[], filter: { open: boolean; harness: string }): Html {
  const rows = sessions.map(
    (s) =>
      html`<tr>
        <td><a href="${base}/sessions/${encodeURIComponent(s.sessionId)}">${s.sessionId}</a></td>
        <td>${s.harness}</td>
        <td>${s.openTurns}</td>
        <td>${s.entries}</td>
        <td>${when(s.lastActivity)}</td>
      </tr>`,
  )
  return html`<h1>Sessions</h1>
    <form method="get">
      <label><input type="checkbox" name="open" value="1" ${filter.open ? 'checked' : ''} /> open only</label>
      <input type="text" name="harness" placeholder="harness" value="${filter.harness}" />
      <button>Filter</button>
    </form>
    <table>
      <thead>
        <tr>
          <th>Session</th>
          <th>Harness</th>
          <th>Open turns</th>
          <th>Log entries</th>
          <th>Last input (UTC)</th>
        </tr>
      </thead>
      <tbody>
        ${
          rows.length
            ? rows
            : html`<tr>
                <td colspan="5" class="muted">No sessions.</td>
              </tr>`
        }
      </tbody>
    </table>`
}

/** One open question with its answer form; an approval's form decides with Approve / Deny. */
function questionCard(base: string, q: OpenQuestion): Html {
  const approval = q.kind === 'approval'
  const formId = `q-${q.questionId.replace(/[^A-Za-z0-9_-]/g, '_')}`
  const action = `${base}/sessions/${encodeURIComponent(q.sessionId)}/questions/${encodeURIComponent(q.questionId)}/answer`
  // an approval's `approved` is the button pressed; its other fields (a reason) come from the schema
  const schema = approval ? withoutProperty(q.schema, 'approved') : q.schema
  const buttons = approval
    ? html`<button type="submit" class="approve" data-approved="true">Approve</button
        ><button type="submit" class="deny" data-approved="false">Deny</button>`
    : html`<button type="submit" class="submit">Answer</button>`
  return html`<div class="qcard ${approval ? 'approval' : 'ask'}" data-question="${q.questionId}">
    <div>
      <strong>${approval ? 'Approval' : 'Question'}</strong> ·
      <a href="${base}/sessions/${encodeURIComponent(q.sessionId)}">${q.sessionId}</a> ·
      <span class="muted">${q.name} (${q.toolCallId})</span>
    </div>
    <p class="message">${q.message}</p>
    ${q.expiresAt ? html`<p class="muted">Expires ${when(q.expiresAt)} UTC</p>` : ''}
    <form class="answer" id="${formId}" data-action="${action}">
      ${schemaFields(schema, formId)}
      <div class="actions">${buttons}<span class="status"></span></div>
    </form>
  </div>`
}

function withoutProperty(schema: unknown, name: string): unknown {
  if (typeof schema !== 'object' || schema === null) return schema
  const properties = 'properties' in schema && typeof schema.properties === 'object' && schema.properties !== null ? schema.properties : {}
  const required = 'required' in schema && Array.isArray(schema.required) ? schema.required : []
  return {
    ...schema,
    properties: Object.fromEntries(Object.entries(properties).filter(([key]) => key !== name)),
    required: required.filter((r) => r !== name),
  }
}

export function questionList(base: string, questions: OpenQuestion[]): Html {
  return questions.length ? html`${questions.map((q) => questionCard(base, q))}` : html`<p class="muted">No open questions.</p>`
}

export function questionsPage(base: string, questions: OpenQuestion[]): Html {
  return html`<h1>Open questions and approvals</h1>
    <div id="all-questions">${questionList(base, questions)}</div>`
}

/** Turns paused by onExhausted 'pause', each with a Resume button (session.resume). */
function pausedList(base: string, sessionId: string, paused: ReadonlyArray<{ inputId: string; error: string }>): Html {
  const action = (inputId: string) => `${base}/sessions/${encodeURIComponent(sessionId)}/turns/${encodeURIComponent(inputId)}/resume`
  return html`${paused.map(
    (p) =>
      html`<form class="resume qcard" data-action="${action(p.inputId)}">
        Turn <code>${p.inputId}</code> is paused: ${p.error} <button type="submit">Resume</button><span class="status"></span>
      </form>`,
  )}`
}

export function sessionPage(
  base: string,
  sessionId: string,
  questions: OpenQuestion[],
  paused: ReadonlyArray<{ inputId: string; error: string }> = [],
  tree: Html | '' = '',
): Html {
  const action = (op: string) => `${base}/sessions/${encodeURIComponent(sessionId)}/${op}`
  return html`<h1>Session ${sessionId}</h1>
    <h2>Model context</h2>
    <form class="context qcard" data-action="${action('compact')}" data-op="compact">
      Compact the model's view now with the harness's strategy <button type="submit">Compact</button><span class="status"></span>
    </form>
    <form
      class="context qcard"
      data-action="${action('reset')}"
      data-op="reset"
      data-confirm="Start the model's context over from the note?"
    >
      Start the model's context over from a note
      <input type="text" name="note" size="40" aria-label="note" placeholder="the note the model sees instead (optional)" />
      <button type="submit">Reset</button><span class="status"></span>
    </form>
    ${
      paused.length
        ? html`<h2>Paused turns</h2>
            ${pausedList(base, sessionId, paused)}`
        : ''
    }
    <h2>Open questions</h2>
    <div id="questions">${questionList(base, questions)}</div>
    ${tree}
    <h2>Timeline</h2>
    <ol id="timeline"></ol>`
}
