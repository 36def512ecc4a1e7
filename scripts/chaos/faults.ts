// Provider faults for `npm run chaos -- --provider-faults`: the billing server (and its model route)
// fails a share of requests (CHAOS_FAULT_RATE, 0.2 there) at random, the ways a real provider does.
import type http from 'node:http'

/**
 * - `timeout`: no answer at all; the client gives up at its own timeout.
 * - `500`, `502`: an error status, AFTER the side effect was applied (the gateway lost the answer).
 * - `503`: overloaded, refused BEFORE anything was done.
 * - `drop`: applied, then the connection is destroyed mid-response (headers and half a body sent).
 */
export type FaultKind = 'timeout' | '500' | '502' | '503' | 'drop'
export const FAULT_KINDS: readonly FaultKind[] = ['timeout', '500', '502', '503', 'drop']

const rate = Number(process.env.CHAOS_FAULT_RATE ?? 0)
// timeouts cost the client its whole timeout, so they are the rarest
const WEIGHTS: Array<[FaultKind, number]> = [
  ['timeout', 1],
  ['500', 1],
  ['502', 1],
  ['503', 1.5],
  ['drop', 1.5],
]
const total = WEIGHTS.reduce((s, [, w]) => s + w, 0)

export function faultCounts(): Record<FaultKind, number> {
  return { timeout: 0, '500': 0, '502': 0, '503': 0, drop: 0 }
}

/** A fault for this request (counted in `counts`), or undefined: answer it normally. */
export function pickFault(counts: Record<FaultKind, number>): FaultKind | undefined {
  if (!(rate > 0) || Math.random() >= rate) return undefined
  let r = Math.random() * total
  for (const [kind, w] of WEIGHTS) {
    if ((r -= w) < 0) return (counts[kind]++, kind)
  }
  return (counts.drop++, 'drop')
}

/** Whether the side effect is applied before the fault (the client cannot tell whether it was). */
export const appliesFirst = (kind: FaultKind) => kind !== '503'

/** Fails the response the way `kind` says; `partial` is the start of a body for a drop. */
export function fail(res: http.ServerResponse, kind: FaultKind, partial: string, contentType = 'application/json'): void {
  switch (kind) {
    case 'timeout': {
      // hold the request until the client goes away (its timeout), at most 30 s
      const t = setTimeout(() => res.destroy(), 30_000)
      res.on('close', () => clearTimeout(t))
      return
    }
    case 'drop':
      res.writeHead(200, { 'content-type': contentType })
      res.write(partial.slice(0, Math.max(1, Math.floor(partial.length / 2))))
      // flushed first, so the client has started reading a 200 when the socket dies
      setTimeout(() => res.socket?.destroy(), 5)
      return
    default: {
      const status = Number(kind)
      const message = status === 503 ? 'The server is overloaded, try again' : status === 502 ? 'Bad gateway' : 'Internal server error'
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: `${status} ${message}`, type: 'server_error', code: String(status) } }))
    }
  }
}
