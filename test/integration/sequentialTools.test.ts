// `toolExecution: 'sequential'`: the calls of one model response run one after another in call
// order, each landed before the next begins, over worker processes and a SIGKILL between them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { createHarnessHost, defineHarness, type HarnessHost, type RedisClient } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import type { LogEntry, RecordOf } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { sequential } from '../fixtures/sequential.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { cleanupPrefix, getRedisUrl, rigClient, uniquePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const entryMs = (id: string) => Number(id.split('-')[0])
type Span = { id: string; ev: 'start' | 'end'; at: number; pid: number }

describe("toolExecution: 'sequential' over worker processes", () => {
  let url: string
  let prefix: string
  let host: HarnessHost
  let redis: RedisClient
  const workers: WorkerProcess[] = []
  const spawn = async () => {
    const w = await spawnWorker({ redisUrl: url, prefix, module: 'test/fixtures/sequential.ts', concurrency: 4 })
    workers.push(w)
    return w
  }
  const spans = async (sessionId: string) => (await redis.lrange(`${prefix}:spans:${sessionId}`, 0, -1)).map((s) => JSON.parse(s) as Span)

  beforeAll(async () => {
    url = await getRedisUrl()
    prefix = uniquePrefix('sequential')
    process.env.DH_PREFIX = prefix
    host = createHarnessHost({ redis: url, harnesses: [sequential], prefix, logger: pino({ level: 'silent' }) })
    redis = rigClient(url)
    await Promise.all([spawn(), spawn()])
  })
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await host?.close()
    redis?.disconnect()
    await cleanupPrefix(url, prefix)
  })

  /** Waits for the first span of call `id` with event `ev`, then SIGKILLs the worker that wrote it and starts another. */
  const killAt = async (sessionId: string, id: string, ev: Span['ev']) => {
    let span: Span | undefined
    while (!(span = (await spans(sessionId)).find((x) => x.id === id && x.ev === ev))) await new Promise((r) => setTimeout(r, 10))
    const victim = workers.find((w) => w.proc.pid === span.pid)!
    await victim.kill('SIGKILL')
    workers.splice(workers.indexOf(victim), 1)
    await spawn()
  }
  /** Every start of b (a run again included) comes after a landed and after every run of a ended or began. */
  const expectNoOverlap = async (sessionId: string) => {
    const s = host.open(sequential, { sessionId })
    const all = await spans(sessionId)
    const results = (await s.log.read({ types: ['harness.tool.result'] })) as Array<LogEntry<RecordOf<'harness.tool.result'>>>
    expect(results.map((e) => e.record.result)).toEqual([{ wrote: 'a' }, { wrote: 'b' }])
    const aLanded = entryMs(results[0]!.id)
    const aEvents = all.filter((x) => x.id === 'a')
    const bStarts = all.filter((x) => x.id === 'b' && x.ev === 'start')
    expect(bStarts.length).toBeGreaterThan(0)
    for (const b of bStarts) {
      expect(b.at).toBeGreaterThanOrEqual(aLanded)
      for (const a of aEvents) expect(b.at).toBeGreaterThanOrEqual(a.at)
    }
    expect(all.filter((x) => x.id === 'b' && x.ev === 'end')).toHaveLength(1)
    return all
  }

  it('two calls of one response never overlap, also after a SIGKILL of the worker between them', async () => {
    const s = host.open(sequential, { sessionId: 'seq-kill' })
    const { inputId } = await s.prompt('write a, then b', { context: { run: 'seq-kill' } })
    // a has done its work: kill the worker that ran it, before its landing or b's start
    await killAt('seq-kill', 'a', 'end')
    expect(await s.settled(inputId, { timeoutMs: patient(60_000) })).toMatchObject({ outcome: 'completed', text: 'both written' })
    await expectNoOverlap('seq-kill')
  })

  it('a call cut by a SIGKILL runs again before the next call of the response begins', async () => {
    const s = host.open(sequential, { sessionId: 'seq-cut' })
    const { inputId } = await s.prompt('write a, then b', { context: { run: 'seq-cut' } })
    await killAt('seq-cut', 'a', 'start')
    expect(await s.settled(inputId, { timeoutMs: patient(60_000) })).toMatchObject({ outcome: 'completed', text: 'both written' })
    const all = await expectNoOverlap('seq-cut')
    // a ran twice (cut, then again: replay 'safe'), b once
    expect(all.filter((x) => x.id === 'a' && x.ev === 'start')).toHaveLength(2)
  })

  it("toolExecution other than 'parallel' or 'sequential' is a ConfigError", () => {
    const make = (toolExecution: unknown) =>
      defineHarness({ name: 'bad', adapter: scriptedModel([]), tools: [], toolExecution: toolExecution as 'sequential' })
    expect(() => make('serial')).toThrow(ConfigError)
    expect(() => make('serial')).toThrow(/toolExecution must be 'parallel' or 'sequential'/)
    expect(make(undefined).toolExecution).toBe('parallel')
  })
})
