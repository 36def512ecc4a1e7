// Node's http server (and Express, Fastify's raw routes, ...) speak IncomingMessage/ServerResponse:
// this turns a Fetch handler into one of their listeners.
import type { IncomingMessage, ServerResponse } from 'node:http'

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
  const body = req.body !== undefined ? JSON.stringify(req.body) : bodyOf(req)
  // a stream body needs duplex 'half' in Node (undici); the DOM's RequestInit type does not name it
  const init: RequestInit & { duplex: 'half' } = { method, headers, signal, body, duplex: 'half' }
  return new Request(url, init)
}

/**
 * The request's body as a web stream, read as it is pulled. Its cancel (a body refused while read,
 * 413) only stops the reading: unlike Readable.toWeb's, it does not destroy the socket, so the
 * refusal still reaches the client (and toNodeListener closes the connection after it).
 */
function bodyOf(req: IncomingMessage): ReadableStream<Uint8Array> {
  let open = true
  const end = (finish: () => void) => {
    if (!open) return
    open = false
    finish()
  }
  return new ReadableStream<Uint8Array>({
    start(controller) {
      req.on('data', (chunk: Buffer) => {
        controller.enqueue(chunk)
        if ((controller.desiredSize ?? 0) <= 0) req.pause()
      })
      req.once('end', () => end(() => controller.close()))
      req.once('error', (error) => end(() => controller.error(error)))
      req.once('close', () => end(() => controller.error(new Error('The client closed the connection before its request body ended.'))))
    },
    pull() {
      req.resume()
    },
    cancel() {
      open = false
      req.removeAllListeners('data')
      req.pause()
    },
  })
}

/** What a client may still send of a refused body, and for how long, before its connection is cut. */
const LINGER_BYTES = 4 * 1024 * 1024
const LINGER_MS = 5_000

/**
 * Closes the connection after the response to a request whose body did not end, without a reset that
 * could lose the response: Node ends and destroys a `Connection: close` socket right after the
 * response (destroySoon), and a destroy with unread data sends a reset, which a client still sending
 * may get before it reads the answer. Instead our side ends (FIN) and what the client sends until it
 * sees the answer is dropped, up to LINGER_BYTES or LINGER_MS; then the socket is cut.
 */
function closeAfter(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('Connection', 'close')
  const socket = req.socket
  socket.destroySoon = () => {
    socket.end()
    const cut = setTimeout(() => socket.destroy(), LINGER_MS).unref()
    socket.once('close', () => clearTimeout(cut))
    let dropped = 0
    req.removeAllListeners('data')
    req.on('data', (chunk: Buffer) => {
      if ((dropped += chunk.length) > LINGER_BYTES) socket.destroy()
    })
    req.resume()
  }
}

/** A `(req, res)` listener for `http.createServer`, Express (`app.use('/api/chat', listener)`) and the like. */
export function toNodeListener(handler: FetchHandler): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const gone = new AbortController()
    res.on('close', () => gone.abort())
    void (async () => {
      const response = await handler(toRequest(req, gone.signal))
      res.statusCode = response.status
      // answered before its body was read to the end (a 413, a 401): the rest is never taken in
      if (!req.complete) closeAfter(req, res)
      response.headers.forEach((value, name) => res.setHeader(name, value))
      if (!response.body) return void res.end()
      res.flushHeaders()
      const reader = response.body.getReader()
      // the client left: cancelling the body stream is best effort, nothing waits on it and its failure changes nothing
      gone.signal.addEventListener('abort', () => void reader.cancel().catch(() => {}), { once: true })
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
