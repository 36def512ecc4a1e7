// Node's http server (and Express, Fastify's raw routes, ...) speak IncomingMessage/ServerResponse:
// this turns a Fetch handler into one of their listeners.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'

type FetchHandler = (request: Request) => Promise<Response>

/** The Fetch Request of a Node request; its signal aborts when the client goes away. */
function toRequest(req: IncomingMessage & { body?: unknown; originalUrl?: string }, signal: AbortSignal): Request {
  const host = req.headers.host ?? 'localhost'
  const url = new URL(req.originalUrl ?? req.url ?? '/', `http://${host}`)
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  const method = req.method ?? 'GET'
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers, signal })
  // a body parser (express.json()) that ran first has read the stream: send what it parsed
  const body = req.body !== undefined ? JSON.stringify(req.body) : (Readable.toWeb(req) as ReadableStream<Uint8Array>)
  return new Request(url, { method, headers, signal, body, duplex: 'half' } as RequestInit)
}

/** A `(req, res)` listener for `http.createServer`, Express (`app.use('/api/chat', listener)`) and the like. */
export function toNodeListener(handler: FetchHandler): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const gone = new AbortController()
    res.on('close', () => gone.abort())
    void (async () => {
      const response = await handler(toRequest(req, gone.signal))
      res.statusCode = response.status
      response.headers.forEach((value, name) => res.setHeader(name, value))
      if (!response.body) return void res.end()
      res.flushHeaders()
      const reader = response.body.getReader()
      gone.signal.addEventListener('abort', () => reader.cancel().catch(() => {}), { once: true })
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        // wait for the socket when it is full, so a slow client slows the reading down
        if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve))
      }
      res.end()
    })().catch((error: unknown) => {
      if (!res.headersSent) {
        res.statusCode = 500
        res.end(JSON.stringify({ error: 'Internal error.', code: 'internal' }))
      } else res.destroy(error instanceof Error ? error : undefined)
    })
  }
}
