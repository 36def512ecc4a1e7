// The handler probed as an attacker would (issue 21): authorize answers that are not a principal,
// oversized chunked bodies, JSON sent as another content type, deep bodies, out-of-range cursors,
// an empty Last-Event-ID, and answers to the question of an aborted turn. Real HTTP, real Redis.
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { defineHarness, type HarnessHost } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { createHarnessHandler, toNodeListener, type HarnessHandlerOptions } from '../../src/http/index.js'
import { authorize, canAccess, chat, TOKEN } from '../fixtures/chat.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { auth, httpServers, post, readSse, runBody } from '../helpers/http.js'
import { scanKeys } from '../rig.js'

const hosts = useInProcessHosts()
const { serve } = httpServers(hosts)

/** The keys of sessions under a prefix: the queues' own keys (BullMQ meta), the shard count, the call-mark key and the record format are not one's. */
const sessionKeys = async (url: string, prefix: string) =>
  (await scanKeys(url, prefix)).filter(
    (k) => !k.includes('}:jobs:') && ![`${prefix}:shards`, `${prefix}:call-mark-key`, `${prefix}:record-format`].includes(k),
  )

/** The chat handler on a real server with these options; `sockets` holds every connection it accepted. */
async function listen(host: HarnessHost, options: Partial<HarnessHandlerOptions> = {}) {
  const handler = createHarnessHandler({ host, harness: chat, authorize, canAccess, ...options } as HarnessHandlerOptions)
  const server: Server = createServer(toNodeListener(handler))
  const sockets: Socket[] = []
  server.on('connection', (socket) => sockets.push(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  hosts.defer(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))))
  const { port } = server.address() as AddressInfo
  return { base: `http://127.0.0.1:${port}/api/chat`, port, sockets }
}

describe('authorize: anything but a principal object is a refusal', () => {
  // each answer in an object: it.each would spread an array answer ([]) as the test's arguments
  it.each([false, 0, '', true, 'user', []].map((answer) => ({ answer, shown: JSON.stringify(answer) })))(
    'authorize returning $shown gets 401 on every route and writes nothing',
    async ({ answer }) => {
      const { host, prefix, url } = hosts.start(chat, 'probe-authorize')
      const { base } = await listen(host, { authorize: () => answer as never, canAccess: undefined })
      const responses = await Promise.all([
        post(`${base}/run`, runBody('u1-a', 'run-1', 'hi')),
        fetch(`${base}/run?threadId=u1-a`, { headers: auth }),
        fetch(`${base}/events?threadId=u1-a`, { headers: auth }),
        post(`${base}/control`, JSON.stringify({ op: 'prompt', threadId: 'u1-a', text: 'hi' })),
        fetch(`${base}/snapshot?threadId=u1-a`, { headers: auth }),
      ])
      // the statuses first: an admitted request may be an event stream that does not end
      expect(responses.map((r) => r.status)).toEqual([401, 401, 401, 401, 401])
      for (const response of responses) expect(await response.json()).toMatchObject({ code: 'unauthorized' })
      expect(await sessionKeys(url, prefix)).toEqual([])
    },
  )
})

/**
 * A chunked POST (no Content-Length) of `total` bytes over a raw socket, written only as fast as the
 * server reads it; the writing stops once a response has come or the connection closed. Resolves with
 * what came back.
 */
async function postChunked(port: number, path: string, total: number): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let response = ''
  let closed = false
  let wake: (() => void) | undefined
  socket.on('data', (data: Buffer) => ((response += data.toString('latin1')), wake?.()))
  socket.on('drain', () => wake?.())
  socket.on('close', () => ((closed = true), wake?.()))
  socket.on('error', () => {})
  const next = () => new Promise<void>((resolve) => (wake = resolve))
  const head = '{"threadId":"u1-big","runId":"run-1","messages":[{"role":"user","content":"'
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${TOKEN}\r\nContent-Type: application/json\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${head.length.toString(16)}\r\n${head}\r\n`,
  )
  const chunk = 'x'.repeat(64 * 1024)
  const frame = `${chunk.length.toString(16)}\r\n${chunk}\r\n`
  for (let sent = 0; sent < total && !closed && response === ''; sent += chunk.length) {
    if (!socket.write(frame)) await next()
  }
  if (!closed && response === '') socket.write('0\r\n\r\n')
  // the whole response: its chunked body's last chunk, or the server closed the connection
  while (!closed && !response.includes('\r\n0\r\n\r\n')) await next()
  socket.destroy()
  return response
}

describe('request bodies', () => {
  it('a chunked POST run far over 4 MiB gets 413 while the server has read little more than the limit', async () => {
    const { host, prefix, url } = hosts.start(chat, 'probe-chunked')
    const { port, sockets } = await listen(host)
    const response = await postChunked(port, '/api/chat/run', 64 * 1024 * 1024)
    expect(response).toMatch(/^HTTP\/1\.1 413 /)
    expect(response).toContain('body_too_large')
    // the server stopped reading at the limit and closed the connection: it never took the 64 MiB
    expect(sockets).toHaveLength(1)
    await new Promise((resolve) => (sockets[0]!.destroyed ? resolve(undefined) : sockets[0]!.once('close', resolve)))
    expect(sockets[0]!.bytesRead).toBeLessThan(16 * 1024 * 1024)
    expect(await sessionKeys(url, prefix)).toEqual([])
  })

  it('POST run and POST control take JSON only as application/json: text/plain, urlencoded, multipart or none get 415 and write nothing', async () => {
    const { base, prefix, url } = await serve('probe-content-type')
    const run = runBody('u1-ct', 'run-1', 'hi')
    const control = JSON.stringify({ op: 'prompt', threadId: 'u1-ct', text: 'hi' })
    const send = (path: string, body: string, type: string | undefined) =>
      fetch(`${base}/${path}`, {
        method: 'POST',
        headers: { ...auth, ...(type ? { 'content-type': type } : {}) },
        // bytes, not a string: fetch gives a string body text/plain when no type is set
        body: new TextEncoder().encode(body),
      })
    for (const type of [
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json-seq',
      'application/json; charset=utf-16',
      undefined,
    ]) {
      for (const [path, body] of [
        ['run', run],
        ['control', control],
      ] as const) {
        const refused = await send(path, body, type)
        expect(refused.status, `${path} as ${type}`).toBe(415)
        expect(await refused.json()).toMatchObject({ code: 'unsupported_media_type', error: expect.stringContaining('application/json') })
      }
    }
    expect(await sessionKeys(url, prefix)).toEqual([])
    // with the type (and a charset), the same requests are taken
    const accepted = await send('control', control, 'application/json; charset=utf-8')
    expect(await accepted.json()).toMatchObject({ status: 'accepted' })
    const ran = await readSse(await send('run', runBody('u1-ct2', 'run-1', 'hi'), 'Application/JSON'))
    expect(ran[ran.length - 1]!.data).toMatchObject({ type: 'RUN_FINISHED' })
  })

  it('a body nested 10,000 deep (forwardedProps, an answer value) gets 400, not 500, and writes nothing', async () => {
    const { base, prefix, url } = await serve('probe-depth')
    const deep = '['.repeat(10_000) + ']'.repeat(10_000)
    const body = runBody('u1-deep', 'run-1', 'whoami').replace('"forwardedProps":{}', `"forwardedProps":${deep}`)
    const run = await post(`${base}/run`, body)
    expect(run.status).toBe(400)
    expect(await run.json()).toMatchObject({ code: 'bad_request', error: expect.stringContaining('deep') })
    const answer = await post(`${base}/control`, `{"op":"answer","threadId":"u1-deep","questionId":"q","value":${deep}}`)
    expect(answer.status).toBe(400)
    expect(await sessionKeys(url, prefix)).toEqual([])
  })
})

describe('cursors', () => {
  it('a cursor whose stream id is past 2^64-1 gets 400 invalid_cursor at the check, on GET events and POST run', async () => {
    const { host, base } = await serve('probe-cursor')
    await readSse(await post(`${base}/run`, runBody('u1-cur', 'run-1', 'hi')))
    const before = await host.open(chat, { sessionId: 'u1-cur' }).log.read()
    for (const cursor of ['99999999999999999999-0~0-0~~0~0', '0-0~1-99999999999999999999~~0~0', '18446744073709551616-0~0-0~~0~0']) {
      const events = await fetch(`${base}/events?threadId=u1-cur`, { headers: { ...auth, 'Last-Event-ID': cursor } })
      expect(events.status, cursor).toBe(400)
      expect(await events.json()).toMatchObject({ code: 'invalid_cursor' })
      const fromQuery = await fetch(`${base}/events?threadId=u1-cur&from=${cursor}`, { headers: auth })
      expect(fromQuery.status, cursor).toBe(400)
      const run = await post(`${base}/run`, runBody('u1-cur', 'run-2', 'hi'), { ...auth, 'Last-Event-ID': cursor })
      expect(run.status, cursor).toBe(400)
    }
    expect(await host.open(chat, { sessionId: 'u1-cur' }).log.read()).toEqual(before)
  })

  it('an empty Last-Event-ID on a new POST run is no cursor: the run runs', async () => {
    const { host, base } = await serve('probe-empty-cursor')
    const response = await post(`${base}/run`, runBody('u1-empty', 'run-1', 'hi'), { ...auth, 'Last-Event-ID': '' })
    expect(response.status).toBe(200)
    const events = await readSse(response)
    expect(events[0]!.data).toMatchObject({ type: 'RUN_STARTED', runId: 'run-1' })
    expect(events[events.length - 1]!.data).toMatchObject({ type: 'RUN_FINISHED', runId: 'run-1' })
    expect(await host.open(chat, { sessionId: 'u1-empty' }).log.read({ types: ['harness.input'] })).toHaveLength(1)
  })
})

describe('answers', () => {
  it('answering the question of an aborted turn gets 409 question_closed and logs no answer', async () => {
    const { host, base } = await serve('probe-aborted-answer')
    const control = (command: object) => post(`${base}/control`, JSON.stringify({ threadId: 'u1-abort', ...command }))
    await control({ op: 'prompt', text: 'please approve', inputId: 'run-1' })
    // the call asked and parked: its question is open
    await readSse(
      await fetch(`${base}/events?threadId=u1-abort`, { headers: auth }),
      (e) => e.data.type === 'CUSTOM' && e.data.name === 'harness.tool.suspended',
    )
    const [question] = await host.open(chat, { sessionId: 'u1-abort' }).questions()
    expect(await (await control({ op: 'abort', inputId: 'run-1' })).json()).toMatchObject({ status: 'aborted' })
    const answered = await control({ op: 'answer', questionId: question!.questionId, value: { approved: true } })
    expect(answered.status).toBe(409)
    expect(await answered.json()).toMatchObject({ code: 'question_closed', error: expect.stringContaining('aborted') })
    expect(await host.open(chat, { sessionId: 'u1-abort' }).log.read({ types: ['harness.tool.answer'] })).toEqual([])
  })
})

describe('a failing secrets resolver', () => {
  it('a prompt while the harness cannot resolve its secrets gets 503 secrets_unavailable and writes nothing', async () => {
    const broken = defineHarness({
      name: 'test/chat-nosecrets',
      adapter: scriptedModel([]),
      tools: [],
      secrets: () => {
        throw new Error('vault down')
      },
    })
    const { host, prefix, url } = hosts.start(broken, 'probe-secrets')
    const { base } = await listen(host, { harness: broken })
    const response = await post(`${base}/control`, JSON.stringify({ op: 'prompt', threadId: 'u1-s', text: 'hi' }))
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({ code: 'secrets_unavailable' })
    expect(await sessionKeys(url, prefix)).toEqual([])
  })
})
