// createHarnessHandler (durable-harness/http) on a real node:http server, with real Redis, real BullMQ
// workers, and the real @tanstack/ai-client ChatClient + fetchServerSentEvents.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ChatClient, fetchServerSentEvents } from '@tanstack/ai-client'
import { describe, expect, it } from 'vitest'
import { type HarnessHost } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { createHarnessHandler, toNodeListener } from '../../src/http/index.js'
import { spawnWorker } from '../../src/testing/index.js'
import { authorize, canAccess, chat } from '../fixtures/chat.js'
import { LONG_TEXT, streaming } from '../fixtures/streaming.js'
import { useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { auth, httpServers, post, readSse, runBody, textOf } from '../helpers/http.js'
import { rigClient, scanKeys } from '../rig.js'

const hosts = useInProcessHosts()
const { serve } = httpServers(hosts)

const inputsOf = (host: HarnessHost, threadId: string) => host.open(chat, { sessionId: threadId }).log.read({ types: ['harness.input'] })

describe('createHarnessHandler with the real ChatClient', () => {
  it('a prompt sent through ChatClient + fetchServerSentEvents completes and the client holds the answer', async () => {
    const { base } = await serve('http-client')
    const client = new ChatClient({ threadId: 'u1-hello', connection: fetchServerSentEvents(`${base}/run`, { headers: auth }) })
    await client.sendMessage('hello there')
    expect(client.getError()).toBeUndefined()
    expect(textOf(client)).toBe('You said: hello there')
    // the next prompt of the same thread is another turn, answered from the log's history
    await client.sendMessage('again')
    expect(textOf(client)).toContain('You said: again')
  })

  it('a turn with a tool call shows the call and its result in the client messages', async () => {
    const { base } = await serve('http-tool')
    const client = new ChatClient({ threadId: 'u1-tool', connection: fetchServerSentEvents(`${base}/run`, { headers: auth }) })
    await client.sendMessage('what is the stock?')
    expect(client.getError()).toBeUndefined()
    const parts = client.getMessages().flatMap((m) => (m.role === 'assistant' ? m.parts : []))
    expect(parts.find((p) => p.type === 'tool-call')).toMatchObject({ name: 'lookup' })
    expect(JSON.stringify(parts.filter((p) => p.type === 'tool-result' || p.type === 'tool-call'))).toContain('stock')
    expect(textOf(client)).toContain('Done: ')
  })

  it("POST run passes the client's forwardedProps to the turn: its tool calls get them as ctx.context", async () => {
    const { base, host } = await serve('http-context')
    const client = new ChatClient({
      threadId: 'u1-context',
      connection: fetchServerSentEvents(`${base}/run`, { headers: auth }),
      forwardedProps: { user: 'ada', plan: 'pro' },
    })
    await client.sendMessage('whoami')
    expect(client.getError()).toBeUndefined()
    const results = await host.open(chat, { sessionId: 'u1-context' }).log.read({ types: ['harness.tool.result'] })
    expect(results.map((e) => e.record)).toMatchObject([{ name: 'whoami', result: { context: { user: 'ada', plan: 'pro' } } }])
    // and a bare POST run with forwardedProps, as any AG-UI client sends it
    const body = JSON.parse(runBody('u1-context2', 'run-1', 'whoami')) as Record<string, unknown>
    await readSse(await post(`${base}/run`, JSON.stringify({ ...body, forwardedProps: { tenant: 't-9' } })))
    const [landed] = await host.open(chat, { sessionId: 'u1-context2' }).log.read({ types: ['harness.tool.result'] })
    expect(landed?.record).toMatchObject({ result: { context: { tenant: 't-9' } } })
  })

  it('a reload hydrates the thread from GET run?threadId= and joinRun replays a turn from its first event', async () => {
    const { base } = await serve('http-reload')
    const connection = fetchServerSentEvents(`${base}/run?threadId=u1-reload`, { headers: auth })
    const first = new ChatClient({ threadId: 'u1-reload', connection })
    await first.sendMessage('hello reload')
    const hydrated = await connection.hydrate!('u1-reload')
    expect(hydrated.activeRun).toBeNull()
    expect(hydrated.messages.map((m) => m.role)).toEqual(['user', 'assistant'])
    expect(JSON.stringify(hydrated.messages[1])).toContain('You said: hello reload')
    const runId = (await fetch(`${base}/snapshot?threadId=u1-reload`, { headers: auth }).then((r) => r.json())).turns[0].runId
    const replay: any[] = []
    for await (const chunk of connection.joinRun!(runId)) replay.push(chunk)
    expect(replay[0]).toMatchObject({ type: 'RUN_STARTED', runId })
    expect(replay[replay.length - 1]).toMatchObject({ type: 'RUN_FINISHED', runId })
  })
})

describe('POST run retries and conflicts', () => {
  it('the same runId posted again runs once (one harness.input) and streams the same run', async () => {
    const { host, base } = await serve('http-retry')
    const once = await readSse(await post(`${base}/run`, runBody('u1-retry', 'run-1', 'hi')))
    const again = await readSse(await post(`${base}/run`, runBody('u1-retry', 'run-1', 'hi')))
    expect(once[0]!.data).toMatchObject({ type: 'RUN_STARTED', runId: 'run-1', threadId: 'u1-retry' })
    expect(once[once.length - 1]!.data).toMatchObject({ type: 'RUN_FINISHED', runId: 'run-1' })
    expect(again.map((e) => e.id)).toEqual(once.map((e) => e.id))
    expect(await inputsOf(host, 'u1-retry')).toHaveLength(1)
  })

  it('the same runId with another message gets 409 and writes nothing', async () => {
    const { host, base } = await serve('http-conflict')
    await readSse(await post(`${base}/run`, runBody('u1-conflict', 'run-1', 'hi')))
    const before = await host.open(chat, { sessionId: 'u1-conflict' }).log.read()
    const refused = await post(`${base}/run`, runBody('u1-conflict', 'run-1', 'something else'))
    expect(refused.status).toBe(409)
    expect((await refused.json()).code).toBe('input_conflict')
    expect(await host.open(chat, { sessionId: 'u1-conflict' }).log.read()).toEqual(before)
  })
})

describe('refused requests', () => {
  it('createHarnessHandler without authorize is a ConfigError', async () => {
    const { host } = hosts.start(chat, 'http-config')
    expect(() => createHarnessHandler({ host, harness: chat } as never)).toThrow(ConfigError)
  })

  it('401, 403, 400, 404 and 413 answers write nothing to Redis', async () => {
    const { base, prefix, url } = await serve('http-refused')
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const cases: Array<[Promise<Response>, number]> = [
      [post(`${base}/run`, runBody('u1-a', 'run-1', 'hi'), {}), 401],
      [post(`${base}/run`, runBody('u1-a', 'run-1', 'hi'), { authorization: 'Bearer wrong' }), 401],
      [post(`${base}/run`, runBody('u2-a', 'run-1', 'hi')), 403],
      [post(`${base}/run`, runBody('u1-bad id!', 'run-1', 'hi')), 400],
      [post(`${base}/run`, runBody('u1-a', 'run:1', 'hi')), 400],
      [post(`${base}/run`, '{not json'), 400],
      [post(`${base}/run`, JSON.stringify({ threadId: 'u1-a', runId: 'run-1', messages: [{ role: 'assistant', content: 'x' }] })), 400],
      [post(`${base}/control`, JSON.stringify({ op: 'nope', threadId: 'u1-a' })), 400],
      [post(`${base}/control`, JSON.stringify({ op: 'prompt', threadId: 'u2-a', text: 'hi' })), 403],
      [post(`${base}/control`, JSON.stringify({ op: 'abort', threadId: 'u1-a', inputId: 'run-1' })), 404],
      [post(`${base}/control`, JSON.stringify({ op: 'answer', threadId: 'u1-a', questionId: 'q', value: true })), 404],
      [fetch(`${base}/snapshot?threadId=u1-a`, { headers: auth }), 404],
      [fetch(`${base}/events?threadId=u1-a`, { headers: auth }), 404],
      [fetch(`${base}/run?threadId=u1-a`, { headers: auth }), 404],
      [fetch(`${base}/run?threadId=u1-a&runId=run-1`, { headers: auth }), 404],
      [fetch(`${base}/events`, { headers: auth }), 400],
      [fetch(`${base}/nowhere`, { headers: auth }), 404],
      // a body over 4 MiB is refused before it is parsed
      [post(`${base}/run`, runBody('u1-a', 'run-1', 'x'.repeat(5 * 1024 * 1024))), 413],
    ]
    for (const [request, status] of cases) {
      const response = await request
      expect(response.status).toBe(status)
      expect((await response.json()).error).toEqual(expect.any(String))
    }
    // the queues' own keys (BullMQ's meta, made when the workers start), the shard count, the call-mark key and the record format are the deployment's, not a session's
    const sessionKeys = (await scanKeys(url, prefix)).filter(
      (k) => !k.includes('}:jobs:') && ![`${prefix}:shards`, `${prefix}:call-mark-key`, `${prefix}:record-format`].includes(k),
    )
    expect(sessionKeys).toEqual([])
  })

  it('a thread that exists: a bad Last-Event-ID is a 400, a question that is not open a 404, and nothing is written', async () => {
    const { host, base } = await serve('http-refused-existing')
    await readSse(await post(`${base}/run`, runBody('u1-b', 'run-1', 'hi')))
    const before = await host.open(chat, { sessionId: 'u1-b' }).log.read()
    const badCursor = await fetch(`${base}/events?threadId=u1-b`, { headers: { ...auth, 'Last-Event-ID': 'not-a-cursor' } })
    expect(badCursor.status).toBe(400)
    const badRetry = await post(`${base}/run`, runBody('u1-b', 'run-2', 'hi'), { ...auth, 'Last-Event-ID': 'garbage' })
    expect(badRetry.status).toBe(400)
    const noQuestion = await post(`${base}/control`, JSON.stringify({ op: 'answer', threadId: 'u1-b', questionId: 'q-1', value: {} }))
    expect(noQuestion.status).toBe(404)
    expect(await host.open(chat, { sessionId: 'u1-b' }).log.read()).toEqual(before)
  })
})

describe('GET events', () => {
  it('a reconnect with Last-Event-ID after any event repeats nothing and misses nothing', async () => {
    const { base } = await serve('http-resume')
    await readSse(await post(`${base}/run`, runBody('u1-resume', 'run-1', 'what is the stock?')))
    const full = await readSse(await fetch(`${base}/events?threadId=u1-resume&follow=false`, { headers: auth }))
    expect(full.length).toBeGreaterThan(5)
    for (let k = 0; k < full.length; k++) {
      const rest = await readSse(
        await fetch(`${base}/events?threadId=u1-resume&follow=false`, { headers: { ...auth, 'Last-Event-ID': full[k]!.id! } }),
      )
      expect(rest).toEqual(full.slice(k + 1))
    }
  })

  it('a follower cut off mid-turn reconnects with Last-Event-ID and gets the rest of the turn exactly once', async () => {
    const { base } = await serve('http-resume-live')
    const prompted = await post(
      `${base}/control`,
      JSON.stringify({ op: 'prompt', threadId: 'u1-live', text: 'please approve', inputId: 'run-1' }),
    )
    expect(await prompted.json()).toMatchObject({ status: 'accepted', inputId: 'run-1' })
    // the turn waits for a person: read up to the question, then drop the connection
    const head = await readSse(
      await fetch(`${base}/events?threadId=u1-live`, { headers: auth }),
      (e) => e.data.type === 'CUSTOM' && /ask/.test(e.data.name),
    )
    const snapshot = await (await fetch(`${base}/snapshot?threadId=u1-live`, { headers: auth })).json()
    expect(snapshot).toMatchObject({ status: 'running', running: ['run-1'] })
    const answered = await post(
      `${base}/control`,
      JSON.stringify({ op: 'answer', threadId: 'u1-live', questionId: snapshot.questions[0].questionId, value: { approved: true } }),
    )
    expect(await answered.json()).toMatchObject({ status: 'answered' })
    const tail = await readSse(
      await fetch(`${base}/events?threadId=u1-live`, { headers: { ...auth, 'Last-Event-ID': head[head.length - 1]!.id! } }),
      (e) => e.data.type === 'RUN_FINISHED',
    )
    const full = await readSse(await fetch(`${base}/events?threadId=u1-live&follow=false`, { headers: auth }))
    expect([...head, ...tail]).toEqual(full)
    expect(JSON.stringify(tail)).toContain('approved')
  })
})

describe('a second host process', () => {
  it('serves the same session: its events, and a join of a turn that runs on the first host’s workers', async () => {
    const { host, base, prefix, url } = await serve('http-second')
    const other = await spawnWorker({ entry: 'test/fixtures/chatServer.ts', module: 'test/fixtures/chat.ts', redisUrl: url, prefix })
    hosts.defer(() => other.kill('SIGKILL'))
    const { port } = (await other.waitFor((l) => l.msg === 'http server started')) as { port: number }
    const second = `http://127.0.0.1:${port}/api/chat`
    // a turn that waits for a person, started on the first server; the second joins it
    await post(`${base}/control`, JSON.stringify({ op: 'prompt', threadId: 'u1-shared', text: 'please approve', inputId: 'run-1' }))
    const joined = fetch(`${second}/run?threadId=u1-shared&runId=run-1&offset=-1`, { headers: auth }).then((r) => readSse(r))
    let questions: any[] = []
    while (questions.length === 0) {
      questions = await host.open(chat, { sessionId: 'u1-shared' }).questions()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await post(
      `${second}/control`,
      JSON.stringify({ op: 'answer', threadId: 'u1-shared', questionId: questions[0].questionId, value: { approved: true } }),
    )
    const run = await joined
    expect(run[0]!.data).toMatchObject({ type: 'RUN_STARTED', runId: 'run-1' })
    expect(run[run.length - 1]!.data).toMatchObject({ type: 'RUN_FINISHED', runId: 'run-1' })
    const fromFirst = await readSse(await fetch(`${base}/events?threadId=u1-shared&follow=false`, { headers: auth }))
    const fromSecond = await readSse(await fetch(`${second}/events?threadId=u1-shared&follow=false`, { headers: auth }))
    expect(fromSecond).toEqual(fromFirst)
    const start = fromFirst.findIndex((e) => e.data.type === 'RUN_STARTED')
    const end = fromFirst.findIndex((e) => e.data.type === 'RUN_FINISHED')
    // the same events; their cursors may differ in form (the join started at the run's input), not in where they resume
    expect(fromFirst.slice(start, end + 1).map((e) => e.data)).toEqual(run.map((e) => e.data))
  })
})

describe('streaming to the ChatClient', () => {
  const ctx = useWorkerProcesses({ label: 'http-stream', harnesses: [streaming], module: 'test/fixtures/streaming.ts', workers: 1 })

  /** The handler of the streaming harness on a real server, over the block's host (its workers are processes). */
  async function streamingBase(): Promise<string> {
    const server = createServer(toNodeListener(createHarnessHandler({ host: ctx.host, harness: streaming, authorize, canAccess })))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    hosts.defer(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`
  }

  it('a turn streams its text to the client in more than one delta, and the client ends with the whole text once', async () => {
    const base = await streamingBase()
    const seen = new Set<number>()
    const client = new ChatClient({
      threadId: 'u1-stream',
      connection: fetchServerSentEvents(`${base}/run`, { headers: auth }),
      onMessagesChange: () => seen.add(textOf(client).length),
    })
    await client.sendMessage('go')
    expect(client.getError()).toBeUndefined()
    expect(textOf(client)).toBe(LONG_TEXT)
    // the text grew in steps before it was whole
    expect([...seen].filter((n) => n > 0 && n < LONG_TEXT.length).length).toBeGreaterThan(1)
  })

  it('a worker SIGKILLed mid-turn: the client still gets one completed answer', async () => {
    const base = await streamingBase()
    let killed: Promise<void> | undefined
    const client = new ChatClient({
      threadId: 'u1-crash',
      connection: fetchServerSentEvents(`${base}/run`, { headers: auth }),
      onMessagesChange: () => {
        // once the answer has begun to stream, kill the worker writing it and start another
        if (!killed && textOf(client).length > 0)
          killed = (async () => {
            await ctx.workers.splice(0)[0]!.kill('SIGKILL')
            ctx.workers.push(await ctx.spawn())
          })()
      },
    })
    await client.sendMessage('go')
    await killed
    expect(killed).toBeDefined()
    expect(client.getError()).toBeUndefined()
    const answers = client.getMessages().filter((m) => m.role === 'assistant')
    const texts = answers.flatMap((m) => m.parts.flatMap((p) => (p.type === 'text' ? [p.content] : [])))
    // the partial text of the cut model call was replaced (MESSAGES_SNAPSHOT): one answer, whole, once
    expect(texts).toEqual([LONG_TEXT])
  })
})
