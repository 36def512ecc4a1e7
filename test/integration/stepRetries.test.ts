// Step retries (R16) over real Redis and real worker processes, against a provider server of the
// test's own (node:http on 127.0.0.1) that fails on purpose: every try keeps the step's idempotency
// key (R5), the try count and next time survive a SIGKILL and a Redis restart, a long backoff parks
// the call like a sleep (R14), and plain chat() runs the same tries in process (R13).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chat, toolDefinition } from '@tanstack/ai'
import { Job, Queue } from 'bullmq'
import { pino } from 'pino'
import { z } from 'zod'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createHarnessHost, durableTool, type HarnessHost, type Session } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { Timeline } from '../../src/timeline/items.js'
import { toolJobId, type LogEntry, type RecordOf } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/names.js'
import { scriptedModel, type RedisServerHandle } from '../../src/testing/index.js'
import { charge, retries } from '../fixtures/retries.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { cleanupPrefix, getRedisUrl, startPrivateRedis, uniquePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const silent = pino({ level: 'silent' })
const entryMs = (id: string) => Number(id.split('-')[0])
const MODULE = 'test/fixtures/retries.ts'

/** The provider: each scenario answers its list of statuses in turn (the last one from then on) and logs every request. */
interface Answer {
  status: number
  retryAfter?: number
}
const plans = new Map<string, Answer[]>()
const requests: Array<{ scenario: string; key: string; at: number }> = []
let server: Server

function plan(scenario: string, answers: Answer[]): string {
  plans.set(scenario, answers)
  return scenario
}
const requestsOf = (scenario: string) => requests.filter((r) => r.scenario === scenario)

beforeAll(async () => {
  server = createServer((req, res) => {
    const scenario = (req.url ?? '/').slice(1)
    const mine = requestsOf(scenario).length
    requests.push({ scenario, key: String(req.headers['idempotency-key']), at: Date.now() })
    const answers = plans.get(scenario) ?? [{ status: 404 }]
    const answer = answers[Math.min(mine, answers.length - 1)]!
    res.writeHead(answer.status, answer.retryAfter ? { 'retry-after': String(answer.retryAfter) } : {})
    res.end(answer.status < 300 ? JSON.stringify({ ok: true, tries: mine + 1 }) : `status ${answer.status}`)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  // worker processes inherit the test's environment
  process.env.PROVIDER_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

async function retriesOf(s: Session, toolCallId: string): Promise<Array<LogEntry<RecordOf<'harness.tool.step.retry'>>>> {
  const entries = await s.log.read({ types: ['harness.tool.step.retry'] })
  return (entries as Array<LogEntry<RecordOf<'harness.tool.step.retry'>>>).filter((e) => e.record.toolCallId === toolCallId)
}
async function reasonsOf(s: Session, toolCallId: string): Promise<string[]> {
  const entries = (await s.log.read({ types: ['harness.tool.started'] })) as Array<LogEntry<RecordOf<'harness.tool.started'>>>
  return entries.filter((e) => e.record.toolCallId === toolCallId).map((e) => e.record.reason)
}
async function waitUntil(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
const line = (msg: string, toolCallId: string) => (l: Record<string, unknown>) => l.msg === msg && l.toolCallId === toolCallId

describe('step retries over worker processes (R16)', () => {
  let url: string
  let prefix: string
  let host: HarnessHost
  const workers: WorkerProcess[] = []
  const spawn = async () => {
    const w = await spawnWorker({ redisUrl: url, prefix, module: MODULE, concurrency: 4 })
    workers.push(w)
    return w
  }

  beforeAll(async () => {
    url = await getRedisUrl()
    prefix = uniquePrefix('retries')
    host = createHarnessHost({ redis: url, harnesses: [retries], prefix, logger: silent })
    await Promise.all([spawn(), spawn()])
  })
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await host?.close()
    await cleanupPrefix(url, prefix)
  })

  it('R16 R5: a step failing 3 times with 502 then succeeding runs fn 4 times under one idempotency key', async () => {
    const s = host.open(retries, { sessionId: 'three-502' })
    const scenario = plan('three-502', [{ status: 502 }, { status: 502 }, { status: 502 }, { status: 200 }])
    const result = await s.runTool(
      { name: 'charge', input: { scenario, attempts: 5, delayMs: 100 }, toolCallId: 'pay-1' },
      { timeoutMs: patient(30_000) },
    )
    expect(result).toEqual({ paid: { ok: true, tries: 4 } })
    const tries = requestsOf(scenario)
    expect(tries).toHaveLength(4)
    expect(new Set(tries.map((t) => t.key))).toEqual(new Set(['three-502:pay-1:pay']))
    // each failed try is a record with its number, its error and the next time
    const failed = await retriesOf(s, 'pay-1')
    expect(failed.map((e) => e.record.attempt)).toEqual([1, 2, 3])
    expect(failed.map((e) => e.record.error.message)).toEqual(Array(3).fill('provider answered 502'))
    for (const [i, e] of failed.entries()) expect(tries[i + 1]!.at).toBeGreaterThanOrEqual(e.record.nextAt!)
    expect(await reasonsOf(s, 'pay-1')).toEqual(['fresh'])
    // and a line each in the timeline (CLI `log`, the dashboard)
    const timeline = new Timeline()
    const items = []
    for await (const event of s.events({ follow: false })) items.push(...timeline.push(event))
    const lines = items.filter((i) => i.kind === 'retry').map((i) => i.text)
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(/^pay-1 step pay try 1 failed: provider answered 502, next try at \d{4}-/)
  })

  it('R16 R14: a worker SIGKILLed during a parked 5 s backoff: another worker goes on at the same try count', async () => {
    const s = host.open(retries, { sessionId: 'kill-park' })
    // two attempts: the try after the wake-up is the last one only if the count survived
    const scenario = plan('kill-park', [{ status: 502 }])
    const call = s.runTool(
      { name: 'charge', input: { scenario, attempts: 2, delayMs: 5000 }, toolCallId: 'pay-2' },
      { timeoutMs: patient(40_000) },
    )
    call.catch(() => {})
    const parked = await Promise.race(workers.map((w) => w.waitFor(line('tool call parked', 'pay-2')).then(() => w)))
    await parked.kill('SIGKILL')
    workers.splice(workers.indexOf(parked), 1)
    await spawn()

    await expect(call).rejects.toMatchObject({ toolError: { code: 'step_retries_exhausted' } })
    const tries = requestsOf(scenario)
    expect(tries.map((t) => t.key)).toEqual(['kill-park:pay-2:pay', 'kill-park:pay-2:pay'])
    const failed = await retriesOf(s, 'pay-2')
    expect(failed.map((e) => [e.record.attempt, e.record.final])).toEqual([
      [1, undefined],
      [2, 'exhausted'],
    ])
    expect(tries[1]!.at).toBeGreaterThanOrEqual(failed[0]!.record.nextAt!)
    // a park, not a cut: one start, one park of kind retry
    expect(await reasonsOf(s, 'pay-2')).toEqual(['fresh'])
    const parks = (await s.log.read({ types: ['harness.tool.suspended'] })) as Array<LogEntry<RecordOf<'harness.tool.suspended'>>>
    expect(parks.map((e) => [e.record.kind, e.record.until])).toEqual([['retry', failed[0]!.record.nextAt]])
  })

  it('R16: a worker SIGKILLed during an in-process backoff: the run again keeps the try count and waits for the stored next time', async () => {
    const s = host.open(retries, { sessionId: 'kill-wait' })
    const scenario = plan('kill-wait', [{ status: 502 }, { status: 502 }, { status: 200 }])
    const call = s.runTool(
      { name: 'charge', input: { scenario, attempts: 4, delayMs: 1500 }, toolCallId: 'pay-3' },
      { timeoutMs: patient(40_000) },
    )
    call.catch(() => {})
    const running = await Promise.race(workers.map((w) => w.waitFor(line('tool call started', 'pay-3')).then(() => w)))
    await waitUntil(async () => (await retriesOf(s, 'pay-3')).length === 1, 'the first failed try')
    await running.kill('SIGKILL')
    workers.splice(workers.indexOf(running), 1)
    await spawn()

    expect(await call).toEqual({ paid: { ok: true, tries: 3 } })
    const failed = await retriesOf(s, 'pay-3')
    // the run again went on at try 2: no try was counted twice, none was made before its time
    expect(failed.map((e) => e.record.attempt)).toEqual([1, 2])
    const tries = requestsOf(scenario)
    expect(tries).toHaveLength(3)
    expect(new Set(tries.map((t) => t.key)).size).toBe(1)
    expect(tries[1]!.at).toBeGreaterThanOrEqual(failed[0]!.record.nextAt!)
    expect(await reasonsOf(s, 'pay-3')).toEqual(['fresh', 'rerun'])
  })

  it("R16: a RetryAfterError of 2 s is waited for, over the policy's own delay", async () => {
    const s = host.open(retries, { sessionId: 'retry-after' })
    const scenario = plan('retry-after', [{ status: 429, retryAfter: 2 }, { status: 200 }])
    const result = await s.runTool(
      { name: 'charge', input: { scenario, attempts: 3, delayMs: 10 }, toolCallId: 'pay-4' },
      { timeoutMs: patient(30_000) },
    )
    expect(result).toEqual({ paid: { ok: true, tries: 2 } })
    const [first, second] = requestsOf(scenario)
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(2000)
    const [failed] = await retriesOf(s, 'pay-4')
    expect(failed!.record.nextAt! - entryMs(failed!.id)).toBeGreaterThan(1900)
  })

  it("R16: a RetryAfterError whose delay is negative (the provider's clock ahead) is tried again at once, not a config error", async () => {
    const s = host.open(retries, { sessionId: 'retry-after-skew' })
    const scenario = plan('retry-after-skew', [{ status: 429, retryAfter: -3 }, { status: 200 }])
    const result = await s.runTool(
      { name: 'charge', input: { scenario, attempts: 3, delayMs: 60_000 }, toolCallId: 'pay-skew' },
      { timeoutMs: patient(30_000) },
    )
    expect(result).toEqual({ paid: { ok: true, tries: 2 } })
    const [failed] = await retriesOf(s, 'pay-skew')
    // the next try was due at the throw, not the policy's minute later
    expect(failed!.record.nextAt! - entryMs(failed!.id)).toBeLessThan(1_000)
  })

  it('R16: NonRetryableError fails the step at once; the tool error says why', async () => {
    const s = host.open(retries, { sessionId: 'non-retryable' })
    const scenario = plan('non-retryable', [{ status: 400 }, { status: 200 }])
    const call = s.runTool(
      { name: 'charge', input: { scenario, attempts: 5, delayMs: 10 }, toolCallId: 'pay-5' },
      { timeoutMs: patient(30_000) },
    )
    await expect(call).rejects.toMatchObject({ toolError: { code: 'non_retryable', message: 'provider refused: status 400' } })
    expect(requestsOf(scenario)).toHaveLength(1)
    const failed = await retriesOf(s, 'pay-5')
    expect(failed.map((e) => [e.record.attempt, e.record.final, e.record.nextAt])).toEqual([[1, 'stopped', undefined]])
  })

  it('R16: every try failed: StepRetriesExhaustedError with the last error as cause, which the tool may catch', async () => {
    const s = host.open(retries, { sessionId: 'exhausted' })
    const caught = plan('exhausted-caught', [{ status: 503 }])
    const result = await s.runTool(
      {
        name: 'charge',
        input: { scenario: caught, attempts: 3, delayMs: 20, backoff: 'exponential', catchExhausted: true },
        toolCallId: 'pay-6',
      },
      { timeoutMs: patient(30_000) },
    )
    expect(result).toEqual({ exhausted: 3, last: 'provider answered 503' })
    expect(requestsOf(caught)).toHaveLength(3)
    expect((await retriesOf(s, 'pay-6')).map((e) => e.record.final)).toEqual([undefined, undefined, 'exhausted'])

    const thrown = plan('exhausted-thrown', [{ status: 503 }])
    const call = s.runTool(
      { name: 'charge', input: { scenario: thrown, attempts: 2, delayMs: 20 }, toolCallId: 'pay-7' },
      { timeoutMs: patient(30_000) },
    )
    await expect(call).rejects.toMatchObject({ toolError: { code: 'step_retries_exhausted' } })
    expect(requestsOf(thrown)).toHaveLength(2)
  })
})

describe('a 1-hour step backoff across a Redis restart (R16, R14)', () => {
  let redisServer: RedisServerHandle
  let worker: WorkerProcess | undefined
  let host: HarnessHost | undefined
  const prefix = uniquePrefix('retry-aof')

  beforeAll(async () => {
    redisServer = await startPrivateRedis()
  })
  afterEach(async () => {
    await worker?.kill('SIGKILL')
    await host?.close()
  })
  afterAll(() => redisServer?.stop())

  it('R16 R14: a parked backoff holds no worker slot; after Redis is SIGKILLed and restarted the tries and next times are kept and the call wakes', async () => {
    // one slot: the parked calls must not hold it
    worker = await spawnWorker({ redisUrl: redisServer.url, prefix, module: MODULE, concurrency: 1 })
    host = createHarnessHost({ redis: redisServer.url, harnesses: [retries], prefix, logger: silent })
    const s = host.open(retries, { sessionId: 'aof-retry' })
    // the tool-wide default (durableTool's retry): 3 attempts, 1 hour apart
    const hour = plan('hour', [{ status: 502 }, { status: 200 }])
    s.runTool({ name: 'hourly', input: { scenario: hour }, toolCallId: 'hourly-1' }).catch(() => {})
    // and a parked backoff short enough to wake in the test
    const short = plan('short', [{ status: 502 }, { status: 200 }])
    const shortCall = s.runTool(
      { name: 'charge', input: { scenario: short, attempts: 3, delayMs: 4000 }, toolCallId: 'short-1' },
      { timeoutMs: patient(60_000) },
    )
    shortCall.catch(() => {})
    await worker.waitFor(line('tool call parked', 'hourly-1'))
    await worker.waitFor(line('tool call parked', 'short-1'))
    expect(await s.runTool({ name: 'ping', input: {} }, { timeoutMs: patient(20_000) })).toEqual({ pong: true })

    const [hourly] = await retriesOf(s, 'hourly-1')
    expect(hourly!.record.nextAt! - entryMs(hourly!.id)).toBeGreaterThanOrEqual(3_600_000 - 1000)
    await redisServer.kill()
    await new Promise((r) => setTimeout(r, 300))
    await redisServer.restart()

    // the short backoff wakes after the restart and goes on at try 2
    expect(await shortCall).toEqual({ paid: { ok: true, tries: 2 } })
    expect((await retriesOf(s, 'short-1')).map((e) => e.record.attempt)).toEqual([1])
    // the hour-long one is still parked at its stored time; woken early by hand (its delayed job promoted),
    // it makes no try: it reads its stored next time and parks again until then (R16)
    const queue = { prefix: bullPrefix(prefix, 0, 1), connection: { url: redisServer.url } }
    const tools = new Queue(toolQueueName('retries'), queue)
    try {
      const job = await Job.fromId(tools, toolJobId('aof-retry', 'hourly-1'))
      expect(await job!.getState()).toBe('delayed')
      // delayed to about its stored next time, an hour away (BullMQ counts the delay from its own clock
      // reading, taken when the park reached it: on a loaded machine that can be seconds after nextAt was set)
      expect(Math.abs(job!.timestamp + job!.delay - hourly!.record.nextAt!)).toBeLessThan(60_000)
      await job!.promote()
      await waitUntil(() => worker!.lines.filter(line('tool call parked', 'hourly-1')).length === 2, 'the second park')
      const parks = (await s.log.read({ types: ['harness.tool.suspended'] })) as Array<LogEntry<RecordOf<'harness.tool.suspended'>>>
      expect(parks.filter((e) => e.record.toolCallId === 'hourly-1').map((e) => e.record.until)).toEqual([
        hourly!.record.nextAt,
        hourly!.record.nextAt,
      ])
      expect(requestsOf(hour)).toHaveLength(1)
      expect(await reasonsOf(s, 'hourly-1')).toEqual(['fresh'])
    } finally {
      await tools.close()
    }
  })
})

describe('step retries in plain chat() (R13, R16)', () => {
  it('R13 R16: the same tries run in process, nothing stored', async () => {
    const scenario = plan('plain', [{ status: 502 }, { status: 502 }, { status: 200 }])
    const adapter = scriptedModel([
      { toolCalls: [{ id: 'plain-1', name: 'charge', input: { scenario, attempts: 3, delayMs: 50 } }] },
      ({ messages }) => ({ text: `got ${String(messages.at(-1)?.content)}` }),
    ])
    let text = ''
    for await (const chunk of chat({ adapter, messages: [{ role: 'user', content: 'go' }], tools: [charge] }))
      if (chunk.type === 'TEXT_MESSAGE_CONTENT') text += chunk.delta
    expect(text).toBe('got {"paid":{"ok":true,"tries":3}}')
    expect(requestsOf(scenario).map((r) => r.key)).toEqual(Array(3).fill('chat:plain-1:pay'))
  })

  it('a bad retry policy is a ConfigError that names the field', () => {
    const def = toolDefinition({ name: 'bad', description: 'A bad policy', inputSchema: z.object({}) })
    expect(() => durableTool(def, async () => 1, { retry: { attempts: 0 } })).toThrow(ConfigError)
    expect(() => durableTool(def, async () => 1, { retry: { attempts: 2, backoff: 'fast' as never } })).toThrow(/retry\.backoff/)
    expect(() => durableTool(def, async () => 1, { retry: { attempts: 2, delay: '5 parsecs' as never } })).toThrow(/retry\.delay/)
  })
})
