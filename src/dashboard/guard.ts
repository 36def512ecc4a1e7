import { timingSafeEqual } from 'node:crypto'
import type { Context } from 'hono'
import { html, raw } from 'hono/html'

/** The cookie the token exchange sets: the dashboard's credential in a browser. */
const TOKEN_COOKIE = 'dh_token'

const refuse = (c: Context, status: 400 | 401 | 403, error: string, code: string) => c.json({ error, code }, status)

/**
 * DNS rebinding: a page of another name that resolves to this server sends its own name as Host.
 * With `allowedHosts` a request must name one of them (host:port, as the browser sends it).
 */
export function hostRefusal(c: Context, allowedHosts: readonly string[] | undefined): Response | undefined {
  if (!allowedHosts) return undefined
  const host = (c.req.header('host') ?? '').toLowerCase()
  if (allowedHosts.some((h) => h.toLowerCase() === host)) return undefined
  return refuse(
    c,
    403,
    `Forbidden: this dashboard answers to ${allowedHosts.join(', ')}, not the Host ${JSON.stringify(host)}.`,
    'forbidden_host',
  )
}

/**
 * Cross-site requests: a request that may change something (any method but GET and HEAD) must come
 * from a page of this dashboard: an Origin of this Host (or one of `allowedOrigins`), or no Origin
 * and `Sec-Fetch-Site: same-origin`. A script outside a browser sends `Origin: <the dashboard's origin>`.
 */
export function originRefusal(c: Context, allowedOrigins: readonly string[]): Response | undefined {
  if (c.req.method === 'GET' || c.req.method === 'HEAD') return undefined
  const origin = c.req.header('origin')
  if (
    origin === undefined
      ? c.req.header('sec-fetch-site') === 'same-origin'
      : sameHost(origin, c.req.header('host')) || allowedOrigins.includes(origin)
  )
    return undefined
  return refuse(
    c,
    403,
    `Forbidden: a ${c.req.method} must come from the dashboard's own pages (Origin ${JSON.stringify(origin ?? null)} is not this dashboard).`,
    'forbidden_origin',
  )
}

function sameHost(origin: string, host: string | undefined): boolean {
  if (!host || !/^https?:\/\//.test(origin)) return false
  try {
    return new URL(origin).host === new URL(`http://${host}`).host
  } catch {
    return false
  }
}

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

/** The token a request carries as a credential: `Authorization: Bearer`, or the cookie. Never the query. */
export function tokenPrincipal(request: Request, token: string): { token: true } | null {
  const bearer = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1]
  const cookie = new RegExp(`(?:^|;\\s*)${TOKEN_COOKIE}=([^;]+)`).exec(request.headers.get('cookie') ?? '')?.[1]
  const given = bearer ?? (cookie === undefined ? undefined : safeDecode(cookie))
  return given !== undefined && same(given, token) ? { token: true } : null
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/**
 * The link's exchange: a GET with `?token=` (the link `harness dashboard` prints) gets the token as an
 * HttpOnly, SameSite=Strict cookie and a page that replaces its URL with the same one without the
 * token. Nothing else is served to a tokened URL, and a wrong token is a 401. The page navigates
 * itself (not a 3xx): a link opened from another site is a cross-site navigation, whose redirect
 * would not carry a Strict cookie; a navigation from our own page does.
 */
export async function tokenExchange(c: Context, token: string, base: string): Promise<Response | undefined> {
  const url = new URL(c.req.url)
  if (!url.searchParams.has('token')) return undefined
  const given = url.searchParams.get('token') ?? ''
  if (c.req.method !== 'GET' || !same(given, token))
    return refuse(c, 401, 'Unauthorized: wrong token (or ?token= on a request that is not a GET of a page).', 'unauthorized')
  url.searchParams.delete('token')
  // one leading slash: '//evil.example/' would be another host's URL
  const target = `/${url.pathname.replace(/^\/+/, '')}${url.search}`
  const secure = url.protocol === 'https:' ? '; Secure' : ''
  c.header('set-cookie', `${TOKEN_COOKIE}=${encodeURIComponent(token)}; Path=${base || '/'}; HttpOnly; SameSite=Strict${secure}`)
  c.header('cache-control', 'no-store')
  c.header('referrer-policy', 'no-referrer')
  // the target is this server's own path; JSON with '<' escaped cannot end the script element
  const jsTarget = JSON.stringify(target).replace(/</g, '\\u003c')
  return c.html(
    html`<!doctype html>
      <meta charset="utf-8" />
      <meta http-equiv="refresh" content="0; url=${target}" />
      <title>Signed in · durable-harness</title>
      <p>Signed in. <a href="${target}">Continue</a></p>
      <script>
        location.replace(${raw(jsTarget)})
      </script>`,
  )
}
