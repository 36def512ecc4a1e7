// The dashboard probed as an attacker would, over real HTTP, real Redis and a real worker process:
// an authorize that answers false or a string, a principal limited to its own sessions reading and
// changing other sessions' jobs through bull-board, a page of another name (DNS rebinding) or another
// site posting to it, the `harness dashboard` token link, and a bad timeline cursor.
import { existsSync } from 'node:fs'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveDashboard } from '../../src/dashboard/index.js'
import type { DashboardOptions } from '../../src/dashboard/index.js'
import { toolJobId, turnJobId } from '../../src/log/index.js'
import { ops } from '../fixtures/ops.js'
import { spawnBin } from '../helpers/cli.js'
import { useWorkerProcesses } from '../helpers/hosts.js'

const CHROMIUM = '/usr/bin/chromium'
const SHOTS = process.env.DH_SCREENSHOTS === '1'

interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One request with exactly these headers (node:http: fetch will not send another Host). */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        body += chunk
        // an SSE stream that started is enough to see: it does not end by itself
        if (res.headers['content-type']?.startsWith('text/event-stream')) res.destroy()
      })
      const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body })
      res.on('end', done)
      res.on('close', done)
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

describe('the dashboard under attack', () => {
  const ctx = useWorkerProcesses({ label: 'dash-sec', harnesses: [ops], module: 'test/fixtures/ops.ts', workers: 1 })
  const servers: Array<{ close(): Promise<void> }> = []
  const jobs = { alice: '', aliceTurn: '', bob: '', bobTurn: '' }
  let tools = ''

  async function serve(options: Omit<DashboardOptions, 'host'>) {
    const server = await serveDashboard({ host: ctx.host, port: 0, ...options } as Parameters<typeof serveDashboard>[0])
    servers.push(server)
    return server.url
  }

  beforeAll(async () => {
    // two sessions, each with a deploy call parked on its question: a delayed tool job under a turn job
    for (const sessionId of ['alice-1', 'bob-1']) await ctx.host.open(ops, { sessionId }).prompt('deploy:billing', { inputId: 'in-1' })
    for (;;) {
      const open = await ctx.host.questions({ limit: 10 })
      const parked = await Promise.all(
        open.map(async (q) =>
          (
            await ctx.host
              .queues()
              .find((r) => r.kind === 'tools')!
              .queue.getJob(toolJobId(q.sessionId, q.toolCallId))
          )?.isDelayed(),
        ),
      )
      if (open.length === 2 && parked.every(Boolean)) {
        for (const q of open) jobs[q.sessionId === 'alice-1' ? 'alice' : 'bob'] = toolJobId(q.sessionId, q.toolCallId)
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    jobs.aliceTurn = turnJobId('alice-1', 'in-1')
    jobs.bobTurn = turnJobId('bob-1', 'in-1')
    const ref = ctx.host.queues().find((r) => r.kind === 'tools')!
    tools = `shard${ref.shard}.${ref.queue.name}`
  })
  afterAll(async () => {
    for (const server of servers) await server.close()
  })

  it('an authorize answering false, 0, an empty string, a string, true or an array gets 401 on every page, asset and queue route', async () => {
    const paths = [
      '',
      'questions',
      'sessions/alice-1',
      'sessions/alice-1/questions',
      'sessions/alice-1/timeline',
      'metrics',
      'assets/dashboard.js',
      'assets/dashboard.css',
      'queues',
      `queues/queue/${tools}`,
      'queues/api/queues',
      `queues/api/queues/${tools}/${encodeURIComponent(jobs.alice)}`,
      `queues/api/queues/${tools}/${encodeURIComponent(jobs.alice)}/logs`,
    ]
    for (const answer of [false, 0, '', 'Bearer x', true, ['admin']]) {
      const url = await serve({ authorize: () => answer as never })
      for (const path of paths) expect([path, answer, (await send(url + path)).status]).toEqual([path, answer, 401])
      const origin = { origin: url.replace(/\/$/, ''), 'content-type': 'application/json' }
      const posts = [
        ['POST', 'sessions/alice-1/questions/q/answer'],
        ['POST', 'sessions/alice-1/compact'],
        ['POST', 'sessions/alice-1/reset'],
        ['POST', `queues/api/queues/${tools}/add`],
        ['PATCH', `queues/api/queues/${tools}/${encodeURIComponent(jobs.alice)}/update-data`],
      ]
      for (const [method, path] of posts) expect((await send(url + path, { method, headers: origin, body: '{}' })).status).toBe(401)
    }
  })

  it("a principal limited to its own sessions sees only its sessions' jobs in the queue views, and its writes are refused", async () => {
    const url = await serve({ authorize: () => ({ user: 'alice' }), canAccess: (_p, sessionId) => sessionId.startsWith('alice-') })
    const api = `${url}queues/api/queues`
    // the lists, every queue with its jobs of every state: alice's jobs only
    const list = JSON.parse((await send(api)).body) as { queues: Array<{ name: string }> }
    expect(list.queues.map((q) => q.name)).toContain(tools)
    for (const { name } of list.queues)
      for (const status of ['latest', 'delayed', 'waiting-children', 'waiting', 'active', 'completed', 'failed']) {
        const page = await send(`${api}?activeQueue=${encodeURIComponent(name)}&status=${status}&page=1&jobsPerPage=100`)
        expect(page.status).toBe(200)
        expect(page.body).not.toContain('bob-1')
        if (name === tools && (status === 'latest' || status === 'delayed')) expect(page.body).toContain('alice-1')
      }
    // another session's job, its logs and its flow: not found
    for (const id of [jobs.bob, jobs.bobTurn]) {
      const queue = id === jobs.bob ? tools : tools.replace('.tools.', '.turns.')
      for (const suffix of ['', '/logs', '/flow']) {
        const reply = await send(`${api}/${queue}/${encodeURIComponent(id)}${suffix}`)
        expect(reply.body).not.toContain('billing')
        if (suffix !== '/logs') expect(reply.status).toBe(404)
      }
    }
    // her own job is there (a parked job's data keeps only what its id does not name: the session is in the id)
    const own = JSON.parse((await send(`${api}/${tools}/${encodeURIComponent(jobs.alice)}`)).body) as { job: { id: string; data: unknown } }
    expect(own.job.id).toBe(jobs.alice)
    expect(own.job.data).toMatchObject({ input: { service: 'billing' } })

    // every write, on its own job and another's: refused, and nothing changed
    const headers = { origin: url.replace(/\/$/, ''), 'content-type': 'application/json' }
    const writes: Array<[string, string, unknown]> = [
      ['POST', `${tools}/add`, { name: 'deploy', data: { sessionId: 'bob-1', toolCallId: 'x', input: { service: 'evil' } }, options: {} }],
      ['PATCH', `${tools}/${encodeURIComponent(jobs.alice)}/update-data`, { data: { sessionId: 'alice-1', input: { service: 'evil' } } }],
      ['PUT', `${tools}/${encodeURIComponent(jobs.alice)}/promote`, {}],
      ['PUT', `${tools}/${encodeURIComponent(jobs.bob)}/promote`, {}],
      ['PUT', `${tools}/${encodeURIComponent(jobs.alice)}/retry`, {}],
      ['PUT', `${tools}/${encodeURIComponent(jobs.alice)}/clean`, {}],
      ['PUT', `${tools}/retry/failed`, {}],
      ['PUT', `${tools}/promote`, {}],
      ['PUT', `${tools}/clean/delayed`, {}],
      ['PUT', `${tools}/empty`, {}],
      ['PUT', `${tools}/pause`, {}],
      ['PUT', 'pause', {}],
      ['PUT', `${tools}/obliterate`, {}],
    ]
    for (const [method, path, body] of writes)
      expect([method, path, (await send(`${api}/${path}`, { method, headers, body: JSON.stringify(body) })).status]).toEqual([
        method,
        path,
        403,
      ])
    // the session page's compact and reset of another session: refused, nothing logged
    for (const op of ['compact', 'reset'])
      expect((await send(`${url}sessions/bob-1/${op}`, { method: 'POST', headers, body: '{"note":"evil"}' })).status).toBe(403)
    expect(await ctx.host.open(ops, { sessionId: 'bob-1' }).log.read({ types: ['harness.compaction'] })).toEqual([])
    // from another site: refused before anything runs
    const crossSite = { origin: 'https://evil.example', 'content-type': 'application/json' }
    expect((await send(`${url}sessions/alice-1/reset`, { method: 'POST', headers: crossSite, body: '{}' })).status).toBe(403)
    expect(await ctx.host.open(ops, { sessionId: 'alice-1' }).log.read({ types: ['harness.compaction'] })).toEqual([])
    const queue = ctx.host.queues().find((r) => r.kind === 'tools')!.queue
    expect(await queue.isPaused()).toBe(false)
    expect(await queue.getJobCounts('delayed', 'waiting')).toEqual({ delayed: 2, waiting: 0 })
    expect((await queue.getJob(jobs.alice))?.data.input).toEqual({ service: 'billing' })
  })

  it('an operator (canOperate) may pause and resume a queue, a non-operator may not, and no one may add or edit a job', async () => {
    const url = await serve({
      authorize: (request) => ({ user: request.headers.get('x-user') ?? '' }),
      canAccess: (p, sessionId) => (p as { user: string }).user === 'ops' || sessionId.startsWith('alice-'),
      canOperate: (p) => (p as { user: string }).user === 'ops',
    })
    const api = `${url}queues/api/queues`
    const as = (user: string) => ({ origin: url.replace(/\/$/, ''), 'content-type': 'application/json', 'x-user': user })
    const queue = ctx.host.queues().find((r) => r.kind === 'tools')!.queue
    expect((await send(`${api}/${tools}/pause`, { method: 'PUT', headers: as('alice') })).status).toBe(403)
    expect((await send(`${api}/${tools}/pause`, { method: 'PUT', headers: as('ops') })).status).toBe(200)
    expect(await queue.isPaused()).toBe(true)
    expect((await send(`${api}/${tools}/resume`, { method: 'PUT', headers: as('ops') })).status).toBe(200)
    expect(await queue.isPaused()).toBe(false)
    const add = { name: 'deploy', data: { sessionId: 'bob-1', toolCallId: 'x', input: {} }, options: {} }
    expect((await send(`${api}/${tools}/add`, { method: 'POST', headers: as('ops'), body: JSON.stringify(add) })).status).toBe(403)
    const edit = { data: { input: { service: 'evil' } } }
    const path = `${api}/${tools}/${encodeURIComponent(jobs.alice)}/update-data`
    expect((await send(path, { method: 'PATCH', headers: as('ops'), body: JSON.stringify(edit) })).status).toBe(403)
    expect((await queue.getJob(jobs.alice))?.data.input).toEqual({ service: 'billing' })
    expect(await queue.count()).toBe(2)
  })

  it('serveDashboard on loopback answers only Host 127.0.0.1, localhost and [::1] with its port (DNS rebinding), and refuses cross-site writes', async () => {
    const url = await serve({ authorize: () => ({ local: true }) })
    const port = new URL(url).port
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`])
      expect((await send(url, { headers: { host } })).status).toBe(200)
    for (const host of [`evil.example:${port}`, 'localhost', `127.0.0.1:${Number(port) + 1}`, `localhost.evil.example:${port}`]) {
      const reply = await send(url, { headers: { host } })
      expect([host, reply.status, JSON.parse(reply.body).code]).toEqual([host, 403, 'forbidden_host'])
    }
    // an answer may be posted by the dashboard's own page only
    const answer = `${url}sessions/alice-1/questions/none/answer`
    const json = { 'content-type': 'application/json' }
    for (const headers of [{ origin: 'http://evil.example' }, { origin: 'null' }, {}, { 'sec-fetch-site': 'cross-site' }] as Array<
      Record<string, string>
    >) {
      const reply = await send(answer, { method: 'POST', headers: { ...json, ...headers }, body: '{}' })
      expect([headers, reply.status, JSON.parse(reply.body).code]).toEqual([headers, 403, 'forbidden_origin'])
    }
    // from the page itself the request gets through to the answer (which refuses the unknown question)
    for (const headers of [{ origin: `http://localhost:${port}`, host: `localhost:${port}` }, { 'sec-fetch-site': 'same-origin' }] as Array<
      Record<string, string>
    >) {
      const reply = await send(answer, { method: 'POST', headers: { ...json, ...headers }, body: '{}' })
      expect(JSON.parse(reply.body).code).not.toBe('forbidden_origin')
    }
  })

  it('the timeline with a Last-Event-ID that is not a cursor is a 400 invalid_cursor, not an empty stream', async () => {
    const url = await serve({ authorize: () => ({ local: true }) })
    for (const cursor of ['garbage', '1-0~x', '../../etc']) {
      const reply = await send(`${url}sessions/alice-1/timeline`, { headers: { 'last-event-id': cursor } })
      expect([cursor, reply.status, JSON.parse(reply.body).code]).toEqual([cursor, 400, 'invalid_cursor'])
    }
    const good = await send(`${url}sessions/alice-1/timeline`)
    expect(good.status).toBe(200)
    expect(good.headers['content-type']).toContain('text/event-stream')
  })

  describe('harness dashboard (the CLI)', () => {
    async function start(args: string[]) {
      const bin = spawnBin(['dashboard', '--port', '0', ...args], {
        REDIS_URL: ctx.url,
        DH_PREFIX: ctx.prefix,
        HARNESS_MODULE: 'test/fixtures/ops.ts',
      })
      servers.push({ close: async () => void (bin.proc.kill('SIGTERM'), await bin.closed) })
      const line = await bin.waitForLine((l) => l.startsWith('Dashboard: '))
      return /Dashboard: (\S+?)(\?token=.*)?$/.exec(line)![1]!
    }

    it("without a token: another Host is refused, and a cross-site text/plain POST to bull-board's job add adds nothing", async () => {
      const url = await start([])
      const port = new URL(url).port
      expect((await send(url)).status).toBe(200)
      expect((await send(url, { headers: { host: `rebound.evil.example:${port}` } })).status).toBe(403)
      const queue = ctx.host.queues().find((r) => r.kind === 'tools')!.queue
      const before = await queue.count()
      const forged = JSON.stringify({
        name: 'deploy',
        data: { sessionId: 'alice-1', toolCallId: 'forged', input: { service: 'evil' } },
        options: {},
      })
      const reply = await send(`${url}queues/api/queues/${tools}/add`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', origin: 'http://evil.example' },
        body: forged,
      })
      expect(reply.status).toBe(403)
      expect(await queue.count()).toBe(before)
      expect(await queue.getJob(toolJobId('alice-1', 'forged'))).toBeUndefined()
    })

    it('with --token: ?token= on a page sets an HttpOnly SameSite=Strict cookie and strips itself; it is no credential elsewhere', async () => {
      const token = 'cli-token-Zq9'
      const url = await start(['--token', token])
      expect((await send(url)).status).toBe(401)
      const exchange = await send(`${url}sessions/alice-1?token=${token}&x=1`)
      expect(exchange.status).toBe(200)
      const cookie = String(exchange.headers['set-cookie'])
      expect(cookie).toMatch(/^dh_token=cli-token-Zq9; Path=\/; HttpOnly; SameSite=Strict/)
      expect(exchange.body).toContain('location.replace("/sessions/alice-1?x=1")')
      expect(exchange.body).not.toContain(token)
      // the token in the query is not a credential: not for the API, the SSE stream, a POST
      for (const path of ['queues/api/queues', 'sessions/alice-1/timeline', 'metrics']) {
        const reply = await send(`${url}${path}?token=wrong`)
        expect([path, reply.status]).toEqual([path, 401])
        // the right token there is only the exchange: the sign-in page, not the data
        const exchanged = await send(`${url}${path}?token=${token}`)
        expect([path, exchanged.headers['content-type']]).toEqual([path, 'text/html; charset=UTF-8'])
        expect(exchanged.body).toContain('Signed in')
      }
      const post = await send(`${url}sessions/alice-1/questions/q/answer?token=${token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: url.replace(/\/$/, '') },
        body: '{}',
      })
      expect(post.status).toBe(401)
      // the cookie and the bearer header are
      expect((await send(`${url}queues/api/queues`, { headers: { cookie: `dh_token=${token}` } })).status).toBe(200)
      expect((await send(`${url}metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)

      // in a browser: the link leads to the page without the token, whose own script (the SSE timeline) works
      if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package.`)
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
      // the link opened on another site (a chat, a mail): a cross-site navigation, whose redirect would not carry a Strict cookie
      const elsewhere = createServer((_req, res) => res.end(`<a id="link" href="${url}sessions/alice-1?token=${token}">dashboard</a>`))
      await new Promise<void>((resolve) => elsewhere.listen(0, 'localhost', resolve))
      try {
        for (const opened of ['typed', 'from another site']) {
          const page = await browser.newPage({ viewport: { width: 1100, height: 760 } })
          if (opened === 'typed') await page.goto(`${url}sessions/alice-1?token=${token}`)
          else {
            await page.goto(`http://localhost:${(elsewhere.address() as AddressInfo).port}/`)
            await page.click('#link')
          }
          await page.waitForURL(`${url}sessions/alice-1`)
          await page.waitForSelector('#timeline li.question')
          expect(await page.locator('.qcard.ask').count()).toBe(1)
          const [stored] = await page.context().cookies()
          expect(stored).toMatchObject({ name: 'dh_token', httpOnly: true, sameSite: 'Strict' })
          if (SHOTS) await page.screenshot({ path: join(tmpdir(), `dashboard-token-link-${opened.replace(/ /g, '-')}.png`) })
          await page.context().close()
        }
      } finally {
        elsewhere.close()
        await browser.close()
      }
    })
  })
})
