// MCP's DNS-rebinding guard: a page of another name that resolves to this server sends its own name
// as Host, and a browser names the page's origin in Origin; both are checked before anything else.
import { json } from '../http/json.js'

/** 403 for a Host not allowed, or a browser's Origin that is neither allowed nor the server's own; else undefined. */
export function originRefusal(
  request: Request,
  allowedHosts?: readonly string[],
  allowedOrigins?: readonly string[],
): Response | undefined {
  const host = request.headers.get('host') ?? new URL(request.url).host
  if (allowedHosts && !allowedHosts.includes(host))
    return json({ error: `Host ${JSON.stringify(host.slice(0, 100))} is not served here.`, code: 'forbidden' }, 403)
  const origin = request.headers.get('origin')
  if (origin === null) return undefined
  let own = false
  try {
    own = new URL(origin).host === host
  } catch {
    // not a URL: not this server's origin
  }
  if (allowedOrigins ? allowedOrigins.includes(origin) : own) return undefined
  return json({ error: `Origin ${JSON.stringify(origin.slice(0, 100))} may not call this server.`, code: 'forbidden' }, 403)
}
