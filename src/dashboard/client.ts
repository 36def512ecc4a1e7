// The dashboard's one script, served as /assets/dashboard.js: a session's live timeline over SSE
// and the answer forms. Log values reach the page through textContent only, never as HTML.
export const CLIENT_JS = String.raw`
(() => {
  const base = document.body.dataset.base || ''
  const timeline = document.getElementById('timeline')
  const questions = document.getElementById('questions')
  const sessionId = document.body.dataset.session

  function setAt(target, path, value) {
    if (path.length === 0) return value
    let node = target
    path.slice(0, -1).forEach((key) => (node = node[key] ??= {}))
    node[path.at(-1)] = value
    return target
  }

  function answerOf(form) {
    let value = {}
    for (const el of form.querySelectorAll('[data-path]')) {
      const path = JSON.parse(el.dataset.path)
      const raw = el.value
      let v
      if (el.dataset.type === 'boolean') v = el.checked
      else if (raw === '') continue
      else if (el.dataset.type === 'number') v = Number(raw)
      else if (el.dataset.type === 'json') v = JSON.parse(raw)
      else v = raw
      value = setAt(value, path, v)
    }
    return value
  }

  async function submit(event) {
    const form = event.target.closest('form.answer, form.resume, form.context')
    if (!form) return
    event.preventDefault()
    if (form.classList.contains('resume')) return resume(form)
    if (form.classList.contains('context')) return context(form)
    const status = form.querySelector('.status')
    let value
    try {
      value = answerOf(form)
    } catch (error) {
      status.textContent = 'Not JSON: ' + error.message
      return
    }
    const decision = event.submitter && event.submitter.dataset.approved
    if (decision !== undefined) value.approved = decision === 'true'
    status.textContent = 'Sending…'
    const response = await fetch(form.dataset.action, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(value),
    })
    const body = await response.json().catch(() => ({}))
    if (response.ok) {
      form.classList.add('done')
      form.querySelectorAll('input, select, textarea, button').forEach((el) => (el.disabled = true))
      status.textContent = 'Answered. The tool resumes.'
    } else status.textContent = body.error || 'Refused (' + response.status + ').'
  }
  document.addEventListener('submit', submit)

  async function resume(form) {
    const status = form.querySelector('.status')
    status.textContent = 'Resuming…'
    const response = await fetch(form.dataset.action, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    const body = await response.json().catch(() => ({}))
    if (response.ok) form.querySelector('button').disabled = true
    status.textContent = response.ok ? (body.resumed ? 'Resumed.' : 'Not paused any more.') : body.error || 'Refused (' + response.status + ').'
  }

  // compact or reset the model's context: the answer's token counts, as text
  async function context(form) {
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return
    const status = form.querySelector('.status')
    const note = form.querySelector('input[name=note]')
    status.textContent = 'Sending…'
    const response = await fetch(form.dataset.action, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(note && note.value ? { note: note.value } : {}),
    })
    const body = await response.json().catch(() => ({}))
    if (!response.ok) return void (status.textContent = body.error || 'Refused (' + response.status + ').')
    const tokens = body.tokens ? ' ~' + body.tokens.before + ' -> ~' + (body.tokens.after ?? body.tokens.before) + ' tokens' : ''
    status.textContent = (form.dataset.op === 'reset' ? 'Reset.' : body.compacted ? 'Compacted.' : 'Nothing to compact.') + tokens
  }

  async function refreshQuestions() {
    if (!questions || !sessionId) return
    const response = await fetch(base + '/sessions/' + encodeURIComponent(sessionId) + '/questions')
    if (!response.ok) return
    // the server's escaped HTML; a card already shown is kept as it is (a form being filled in stays)
    const fresh = document.createElement('div')
    fresh.innerHTML = await response.text()
    const shown = new Map([...questions.querySelectorAll('[data-question]')].map((el) => [el.dataset.question, el]))
    const open = [...fresh.querySelectorAll('[data-question]')]
    if (open.length === 0) questions.replaceChildren(...fresh.childNodes)
    else questions.replaceChildren(...open.map((el) => shown.get(el.dataset.question) || el))
  }

  if (timeline && sessionId) {
    const source = new EventSource(base + '/sessions/' + encodeURIComponent(sessionId) + '/timeline')
    source.onmessage = (message) => {
      const item = JSON.parse(message.data)
      const li = document.createElement('li')
      li.className = 'item ' + item.kind
      const at = document.createElement('time')
      at.textContent = new Date(item.at).toISOString().slice(11, 23)
      const kind = document.createElement('span')
      kind.className = 'kind'
      kind.textContent = item.kind
      const text = document.createElement('span')
      text.className = 'text'
      text.textContent = item.text
      li.append(at, kind, text)
      timeline.append(li)
      if (item.kind === 'question' || item.kind === 'answer' || item.kind === 'settled') refreshQuestions()
    }
  }
})()
`

export const CSS = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 10px 20px; display: flex; gap: 20px; align-items: baseline; }
header a { color: #cfe0ff; text-decoration: none; } header strong { margin-right: 12px; }
main { padding: 16px 20px; max-width: 1100px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e3e6ea; }
ol#timeline { list-style: none; padding: 0; background: #fff; border: 1px solid #e3e6ea; }
li.item { display: grid; grid-template-columns: 110px 80px 1fr; gap: 8px; padding: 4px 10px; border-bottom: 1px solid #f0f1f3; font-family: ui-monospace, monospace; font-size: 12.5px; }
li.item time { color: #778; } li.item .kind { font-weight: 600; }
li.question .kind, li.answer .kind { color: #9a5b00; } li.result .kind, li.settled .kind { color: #137333; }
li.error .kind { color: #b3261e; } li.step .kind, li.attempt .kind { color: #1a5fb4; }
.qcard { background: #fff; border: 1px solid #e3e6ea; border-left: 4px solid #e0a030; padding: 10px 14px; margin: 10px 0; }
.qcard.approval { border-left-color: #1a5fb4; }
form.answer label { display: block; margin-top: 8px; font-weight: 600; } form.answer label.check { font-weight: 400; }
form.answer input[type=text], form.answer input[type=number], form.answer select, form.answer textarea { width: 100%; max-width: 420px; padding: 4px; }
form.answer button { margin-top: 10px; margin-right: 8px; padding: 5px 14px; }
form.answer .status, form.resume .status, form.context .status { margin-left: 8px; color: #555; } .hint { display: block; color: #666; }
.muted { color: #778; }
form.op { display: inline; margin-right: 6px; } form.op .status { margin-left: 6px; color: #555; } form.filter, .harnesses, form.bulk { display: block; margin: 8px 0; }
`
