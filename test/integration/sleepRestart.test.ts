// step.sleep and step.ask across crashes (R7, R8): a worker SIGKILLed while a call sleeps or after its
// answer landed, and Redis itself SIGKILLed and restarted from its AOF while a call sleeps.
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createHarnessHost, type HarnessHost, type Session } from '../../src/index.js'
import { toolJobId, type HarnessRecordType, type LogEntry, type RecordOf } from '../../src/log/index.js'
import { sessionKeys } from '../../src/log/keys.js'
import { toolQueueName } from '../../src/queue/index.js'
import type { RedisServerHandle } from '../../src/testing/index.js'
import { questionIdOf } from '../../src/tool/index.js'
import { shop } from '../fixtures/shop.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { cleanupPrefix, getRedisUrl, queuePrefix, startPrivateRedis, uniquePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const silent = pino({ level: 'silent' })
const entryMs = (id: string) => Number(id.split('-')[0])

async function recordsOf<K extends HarnessRecordType>(s: Session, type: K, toolCallId?: string): Promise<Array<LogEntry<RecordOf<K>>>> {
  const entries = (await s.log.read({ types: [type] })) as Array<LogEntry<RecordOf<K>>>
  return toolCallId === undefined ? entries : entries.filter((e) => (e.record as { toolCallId?: string }).toolCallId === toolCallId)
}

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** The first character of each stored record of a session's log: '[' a stored array (record format 2), '{' an object. */
const storedShapes = async (client: Redis, prefix: string, sessionId: string) =>
  (await client.xrange(sessionKeys(prefix, sessionId, 1).log, '-', '+')).map(([, fields]) => fields[1]![0]).join('')

const parkedLine = (toolCallId: string) => (l: Record<string, unknown>) => l.msg === 'tool call parked' && l.toolCallId === toolCallId
const landedLine = (toolCallId: string) => (l: Record<string, unknown>) => l.msg === 'tool call landed' && l.toolCallId === toolCallId

describe('sleep and ask across a worker crash (R7, R8)', () => {
  let url: string
  let redis: Redis
  const workers: WorkerProcess[] = []
  const hosts: HarnessHost[] = []
  const prefixes: string[] = []

  beforeAll(async () => {
    url = await getRedisUrl()
    redis = new Redis(url)
  })
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill('SIGKILL')))
    await Promise.all(hosts.splice(0).map((h) => h.close()))
    for (const p of prefixes.splice(0)) await cleanupPrefix(url, p)
  })
  afterAll(() => redis?.disconnect())

  const setup = (label: string) => {
    const prefix = uniquePrefix(label)
    prefixes.push(prefix)
    const host = createHarnessHost({ redis: url, harnesses: [shop], prefix, logger: silent })
    hosts.push(host)
    return { prefix, host }
  }
  const spawn = async (prefix: string) => {
    const w = await spawnWorker({ redisUrl: url, prefix, concurrency: 2 })
    workers.push(w)
    return w
  }

  it('R7: a worker SIGKILLed during the sleep does not restart the timer; another worker finishes the call', async () => {
    const { prefix, host } = setup('sleep-kill')
    // both up before the call, so the survivor's start-up time is not part of what is measured
    const pair = await Promise.all([spawn(prefix), spawn(prefix)])
    const s = host.open(shop, { sessionId: 'kill-nap' })
    const sleepMs = 3000
    const call = s.runTool({ name: 'nap', input: { ms: sleepMs }, toolCallId: 'nap-k' }, { timeoutMs: patient(30_000) })
    call.catch(() => {})
    const parked = await Promise.race(pair.map((w) => w.waitFor(parkedLine('nap-k')).then((line) => ({ w, line }))))
    const survivor = pair.find((w) => w !== parked.w)!
    // a new deployment: the five records of the call's way to its park are stored arrays (record format 2)
    expect(await storedShapes(redis, prefix, 'kill-nap')).toBe('[[[[[')
    await parked.w.kill('SIGKILL')

    const result = (await call) as { slept: number }
    await survivor.waitFor(landedLine('nap-k'))

    const sleeps = await recordsOf(s, 'harness.tool.sleep', 'nap-k')
    expect(sleeps).toHaveLength(1)
    const { wakeAt } = sleeps[0]!.record
    expect(parked.line.until).toBe(new Date(wakeAt).toISOString())
    const [landed] = await recordsOf(s, 'harness.tool.result', 'nap-k')
    // woke at the logged wakeAt, not early; a restarted timer could not land before wakeAt + sleepMs
    expect(entryMs(landed!.id)).toBeGreaterThanOrEqual(wakeAt)
    expect(entryMs(landed!.id)).toBeLessThan(wakeAt + sleepMs)
    expect(result.slept).toBeGreaterThanOrEqual(sleepMs)
    console.log(
      `R7 after SIGKILL: landed ${entryMs(landed!.id) - wakeAt} ms after wakeAt; slept ${result.slept} ms for a ${sleepMs} ms sleep`,
    )

    // a planned resume, not a crash: one start, one park, the step before the sleep ran once
    expect((await recordsOf(s, 'harness.tool.started', 'nap-k')).map((e) => e.record.reason)).toEqual(['fresh'])
    expect(await recordsOf(s, 'harness.tool.suspended', 'nap-k')).toHaveLength(1)
    expect(await redis.hget(`${prefix}:billing`, 'nap-before|kill-nap:nap-k:before')).toBe('1')
  })

  it('R8: after a crash past the answer, the logged answer is returned without asking again', async () => {
    const { prefix, host } = setup('ask-kill')
    const first = await spawn(prefix)
    const s = host.open(shop, { sessionId: 'kill-ask' })
    const call = s.runTool({ name: 'refund', input: { amount: 30, pauseMs: 2500 }, toolCallId: 'rf-1' }, { timeoutMs: patient(40_000) })
    call.catch(() => {})
    await first.waitFor(parkedLine('rf-1'))
    await s.answer(questionIdOf('rf-1', 'approve'), { approved: true })

    // the tool got past its ask and pauses before its refund step: crash it there
    await waitUntil(async () => (await redis.hget(`${prefix}:billing`, 'refund-answered|rf-1')) === '1', 'the answered attempt')
    await first.kill('SIGKILL')
    const second = await spawn(prefix)

    expect(await call).toEqual({ approved: true, refundId: 're_30' })
    await second.waitFor(landedLine('rf-1'))
    expect((await recordsOf(s, 'harness.tool.started', 'rf-1')).map((e) => e.record.reason)).toEqual(['fresh', 'rerun'])
    expect(await recordsOf(s, 'harness.tool.ask', 'rf-1')).toHaveLength(1)
    expect(await recordsOf(s, 'harness.tool.answer', 'rf-1')).toHaveLength(1)
    // the re-run went through the ask again and got the logged answer, and parked no more
    expect(await redis.hget(`${prefix}:billing`, 'refund-answered|rf-1')).toBe('2')
    expect(await recordsOf(s, 'harness.tool.suspended', 'rf-1')).toHaveLength(1)
    expect(await redis.hget(`${prefix}:billing`, 'refund|kill-ask:rf-1:refund')).toBe('1')
    expect(await s.questions()).toEqual([])
  })
})

describe('a sleep across a Redis restart (R7)', () => {
  let server: RedisServerHandle
  let worker: WorkerProcess | undefined
  let host: HarnessHost | undefined

  beforeAll(async () => {
    server = await startPrivateRedis()
  })
  afterAll(async () => {
    await worker?.kill('SIGKILL')
    await host?.close()
    await server?.stop()
  })

  it('R7: Redis SIGKILLed and restarted from its AOF while a call sleeps: the worker reconnects and the call wakes', async () => {
    const prefix = uniquePrefix('sleep-aof')
    worker = await spawnWorker({ redisUrl: server.url, prefix, concurrency: 2 })
    host = createHarnessHost({ redis: server.url, harnesses: [shop], prefix, logger: silent })
    const s = host.open(shop, { sessionId: 'aof-nap' })
    const call = s.runTool({ name: 'nap', input: { ms: 3000 }, toolCallId: 'nap-aof' }, { timeoutMs: patient(40_000) })
    call.catch(() => {})
    await worker.waitFor(parkedLine('nap-aof'))
    // the park slimmed the delayed job's hash (includes/slimJob.lua): the restart brings it back as it was
    const admin = new Redis(server.url, { maxRetriesPerRequest: null })
    admin.on('error', () => {})
    const jobKey = `${queuePrefix(prefix, 'aof-nap')}:${toolQueueName(shop.name)}:${toolJobId('aof-nap', 'nap-aof')}`
    await waitUntil(async () => Number(await admin.hget(jobKey, 'delay')) > 0, 'the job delayed')
    const parkedJob = await admin.hgetall(jobKey)
    expect(JSON.parse(parkedJob.data!)).toEqual({ input: { ms: 3000 } })
    const parkedLog = await admin.xrange(sessionKeys(prefix, 'aof-nap', 1).log, '-', '+')
    expect(await storedShapes(admin, prefix, 'aof-nap')).toBe('[[[[[')

    await server.kill()
    await new Promise((r) => setTimeout(r, 300))
    await server.restart()
    expect(await admin.hgetall(jobKey)).toEqual(parkedJob)
    // the log's stored arrays come back as they were, and read as records
    expect(await admin.xrange(sessionKeys(prefix, 'aof-nap', 1).log, '-', '+')).toEqual(parkedLog)
    admin.disconnect()

    expect(((await call) as { slept: number }).slept).toBeGreaterThanOrEqual(3000)
    await worker.waitFor(landedLine('nap-aof'))
    expect(worker.proc.exitCode).toBeNull()
    const [sleep] = await recordsOf(s, 'harness.tool.sleep', 'nap-aof')
    const [landed] = await recordsOf(s, 'harness.tool.result', 'nap-aof')
    expect(entryMs(landed!.id)).toBeGreaterThanOrEqual(sleep!.record.wakeAt)
    expect((await recordsOf(s, 'harness.tool.started', 'nap-aof')).map((e) => e.record.reason)).toEqual(['fresh'])
    console.log(`R7 across a Redis restart: landed ${entryMs(landed!.id) - sleep!.record.wakeAt} ms after wakeAt`)

    // the same worker still takes new work after the restart
    const after = await s.runTool({ name: 'lookup', input: { sku: 'after-restart' } }, { timeoutMs: patient(20_000) })
    expect(after).toEqual({ sku: 'after-restart', stock: 3 })
  })
})
