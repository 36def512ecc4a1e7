// A fake payment/mail provider for `npm run chaos`, in its own process so killing workers (or Redis)
// never touches its books. Plain node:http on 127.0.0.1, port 0; prints `{"port":N}` on stdout.
//
// POST /charge | /invoice | /mail | /lookup with an `Idempotency-Key` header and a JSON body
// `{ "logical": "<what this side effect is for, e.g. the order id>" }`:
//   - a new key: the side effect happens (200 `{ id }`). If the same logical thing already succeeded
//     under ANOTHER key, that is a duplicate side effect (a card charged twice): counted in
//     `duplicateSideEffects`, the number that must stay 0.
//   - a key seen before: refused with 409 and the original `{ id }`, like a real provider's
//     idempotency check. Counted in `replayedKeys`: a 'safe' step re-run after a crash that came
//     before its value was stored legitimately sends its key again; it never charges twice.
// GET /stats -> { charges, invoices, mails, lookups, replayedKeys, replayedByKind, duplicateSideEffects,
//                 duplicates (= duplicateSideEffects), keys: { <key>: { kind, logical, id, hits } },
//                 healedReplays, healedByKind, faults: { billing, model }, requests: { billing, model } }
//
// With CHAOS_FAULT_RATE (`--provider-faults`: 0.2) a share of requests fail at random (faults.ts):
// timeouts, 500/502/503, dropped connections; some AFTER the side effect was applied. The client's
// step retries then send the same key again: such a replay of a key whose last answer never reached
// the client is a healed retry (`healedReplays`), not a re-send after a delivered answer
// (`replayedKeys`, which for a 'never' tool must stay 0). POST /v1/chat/completions is the model
// (modelRoute.ts), failing at the same rate.
import http from 'node:http'
import { appliesFirst, fail, faultCounts, pickFault } from './faults.js'
import { modelRoute } from './modelRoute.js'

type Kind = 'charge' | 'invoice' | 'mail' | 'lookup'
const KINDS: Record<string, Kind> = { '/charge': 'charge', '/invoice': 'invoice', '/mail': 'mail', '/lookup': 'lookup' }
const PLURAL: Record<Kind, string> = { charge: 'charges', invoice: 'invoices', mail: 'mails', lookup: 'lookups' }

/** `unanswered`: the last answer for this key was a fault, so the client may not know it was applied. */
const keys = new Map<string, { kind: Kind; logical: string; id: string; hits: number; unanswered: boolean }>()
const succeeded = new Map<string, number>() // `${kind}|${logical}` -> successful side effects
const done: Record<Kind, number> = { charge: 0, invoice: 0, mail: 0, lookup: 0 }
const replayedByKind: Record<Kind, number> = { charge: 0, invoice: 0, mail: 0, lookup: 0 }
let replayedKeys = 0
const healedByKind: Record<Kind, number> = { charge: 0, invoice: 0, mail: 0, lookup: 0 }
let healedReplays = 0
const faults = { billing: faultCounts(), model: faultCounts() }
const requests = { billing: 0, model: 0 }
let duplicateSideEffects = 0
let nextId = 1

const send = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

const server = http.createServer((req, res) => {
  let body = ''
  req.on('data', (chunk: Buffer) => (body += chunk.toString()))
  req.on('end', () => {
    if (req.method === 'GET' && req.url === '/stats') {
      return send(res, 200, {
        ...Object.fromEntries(Object.entries(done).map(([k, n]) => [PLURAL[k as Kind], n])),
        replayedKeys,
        replayedByKind,
        duplicateSideEffects,
        duplicates: duplicateSideEffects,
        keys: Object.fromEntries([...keys].map(([key, v]) => [key, { kind: v.kind, logical: v.logical, id: v.id, hits: v.hits }])),
        healedReplays,
        healedByKind,
        faults,
        requests,
      })
    }
    if (req.method === 'POST' && req.url === '/v1/chat/completions') {
      requests.model++
      return modelRoute(body, res, faults.model)
    }
    const kind = KINDS[req.url ?? '']
    if (req.method !== 'POST' || !kind) return send(res, 404, { error: 'not found' })
    const key = req.headers['idempotency-key']
    if (typeof key !== 'string' || key.length === 0) return send(res, 400, { error: 'Idempotency-Key header required' })
    let logical: string
    try {
      logical = String((JSON.parse(body) as { logical?: unknown }).logical ?? '')
    } catch {
      return send(res, 400, { error: 'body must be JSON' })
    }
    if (!logical) return send(res, 400, { error: 'body.logical required' })
    requests.billing++
    const fault = pickFault(faults.billing)
    if (fault && !appliesFirst(fault)) return fail(res, fault, '')
    let seen = keys.get(key)
    let status = 409
    if (seen) {
      seen.hits++
      if (seen.unanswered) {
        healedReplays++
        healedByKind[kind]++
      } else {
        replayedKeys++
        replayedByKind[kind]++
      }
    } else {
      seen = { kind, logical, id: `${kind}_${nextId++}`, hits: 1, unanswered: false }
      keys.set(key, seen)
      const what = `${kind}|${logical}`
      const before = succeeded.get(what) ?? 0
      if (before > 0) duplicateSideEffects++
      succeeded.set(what, before + 1)
      done[kind]++
      status = 200
    }
    const reply = status === 200 ? { id: seen.id } : { error: 'idempotency key already used', id: seen.id }
    // only an injected fault marks a key unanswered: a client cut by a kill mid-request is not
    // excused, so a 'never' call that ran again would still show as a re-sent key
    seen.unanswered = fault !== undefined
    if (fault) return fail(res, fault, JSON.stringify(reply))
    send(res, status, reply)
  })
})

server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as import('node:net').AddressInfo
  process.stdout.write(`${JSON.stringify({ port })}\n`)
})
// the parent ends us with SIGTERM; also go when it dies and closes our stdin
process.on('SIGTERM', () => server.close(() => process.exit(0)))
process.stdin.on('end', () => process.exit(0))
process.stdin.resume()
