// Schedules (host.schedule on BullMQ job schedulers) over worker processes and a private Redis: each
// tick prompts its session once across every worker, through a SIGKILL of a worker and a Redis
// restart; overlap 'skip' skips the ticks that come while the last tick's turn runs.
// The long run is DH_SCHEDULE_FULL=1 (60 s, as the issue asks); the suite runs 24 s of it.
import { Queue } from 'bullmq'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarnessHost, defineHarness, type HarnessHost } from '../../src/index.js'
import { InvalidScheduleError } from '../../src/errors/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { bullPrefix } from '../../src/queue/index.js'
import type { RedisServerHandle } from '../../src/testing/index.js'
import { ticker } from '../fixtures/ticker.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { startPrivateRedis, uniquePrefix } from '../rig.js'

const SECRET = 'sk_live_schedule_secret_0123456789'

const silent = pino({ level: 'silent' })
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))
const RUN_MS = process.env.DH_SCHEDULE_FULL === '1' ? 60_000 : 24_000
const EVERY_MS = 2_000

/** The tick times of a session's inputs, in log order (input ids `tick-<schedule>-<ms>`). */
function tickTimes(entries: Awaited<ReturnType<ReturnType<HarnessHost['open']>['log']['read']>>, schedule: string): number[] {
  return records(entries, 'harness.input').map((r) => Number(String(r.inputId).slice(`tick-${schedule}-`.length)))
}

describe('a schedule over 4 worker processes, a worker SIGKILL and a Redis restart', () => {
  let redis: RedisServerHandle
  let host: HarnessHost
  const prefix = uniquePrefix('sched')
  const workers: WorkerProcess[] = []
  beforeAll(async () => {
    redis = await startPrivateRedis()
    host = createHarnessHost({ redis: redis.url, harnesses: [ticker], prefix, logger: silent })
    workers.push(
      ...(await Promise.all(
        Array.from({ length: 4 }, () => spawnWorker({ module: 'test/fixtures/ticker.ts', redisUrl: redis.url, prefix, concurrency: 2 })),
      )),
    )
  }, 300_000)
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await host?.close()
    await redis?.stop()
  })

  it(`every tick of a 2 s schedule prompts its session exactly once over ${RUN_MS / 1000} s`, async () => {
    const started = Date.now()
    const made = await host.schedule({ id: 'every2s', harness: ticker, every: '2s', prompt: 'tick', overlap: 'queue' })
    expect(made).toMatchObject({ id: 'every2s', harness: 'ticker', every: EVERY_MS, sessionId: 'schedule-every2s', prompted: 0 })
    // just after a tick came due: a worker dies mid-run, maybe with the tick job in hand (it comes back
    // to another worker as stalled, whose prompt of the same input id is a no-op)
    await pause(RUN_MS / 3 + 100)
    await workers.shift()!.kill('SIGKILL')
    await pause(RUN_MS / 6)
    // Redis dies and comes back from its AOF; the scheduler's next tick is in it
    await redis.kill()
    await pause(1_500)
    await redis.restart()
    await pause(Math.max(0, started + RUN_MS - Date.now()))
    expect(await host.unschedule('every2s')).toBe(true)
    const session = host.open(ticker, { sessionId: 'schedule-every2s' })
    // the last tick's turn settles
    await until(
      async () => {
        const entries = await session.log.read()
        return records(entries, 'harness.input.settled').length === records(entries, 'harness.input').length
      },
      'every tick turn to settle',
      60_000,
    )
    const entries = await session.log.read()
    const times = tickTimes(entries, 'every2s')
    // exactly once: no tick time twice, every tick on the 2 s grid, one settle an input
    expect(new Set(times).size).toBe(times.length)
    // on one 2 s grid (BullMQ anchors `every` at the first tick): gaps are whole intervals
    for (let i = 1; i < times.length; i++) expect((times[i]! - times[0]!) % EVERY_MS).toBe(0)
    const settled = records(entries, 'harness.input.settled')
    expect(settled.map((r) => r.inputId).sort()).toEqual(
      records(entries, 'harness.input')
        .map((r) => r.inputId)
        .sort(),
    )
    expect(settled.every((r) => r.outcome === 'completed')).toBe(true)
    // every tick BullMQ ran is one input: the completed tick jobs' times are the inputs' times
    const queue = new Queue('schedules', { connection: { url: redis.url }, prefix: bullPrefix(prefix, 0, 1) })
    // a scheduler's job id is repeat:<schedule>:<tick ms>
    const ran = (await queue.getCompleted(0, -1)).map((j) => Number(String(j.id).split(':').at(-1)))
    await queue.close()
    expect([...new Set(ran)].sort()).toEqual([...times].sort())
    // no tick lost but those due while Redis was down: at most the outage's and the edges'
    const expected = Math.floor(RUN_MS / EVERY_MS)
    expect(times.length).toBeGreaterThanOrEqual(expected - 4)
    expect(times.length).toBeLessThanOrEqual(expected + 1)
  }, 240_000)
})

describe('schedules in one process', () => {
  const hosts = useInProcessHosts()

  it("overlap 'skip': ticks that come while the last tick's turn runs are skipped, the others prompt", async () => {
    const { host } = hosts.start(ticker, 'sched-skip', { concurrency: 4 })
    await host.schedule({ id: 'slow', harness: 'ticker', every: '1s', prompt: 'slow:2500', overlap: 'skip' })
    const session = host.open(ticker, { sessionId: 'schedule-slow' })
    // a tick's input is logged just before its schedule counts it: wait for both
    const promptedTicks = async () => ((await host.schedules())[0]?.prompted ?? 0) >= 3
    await until(
      async () => records(await session.log.read(), 'harness.input').length >= 3 && (await promptedTicks()),
      'three prompted ticks',
      60_000,
    )
    const [running] = await host.schedules()
    expect(running).toMatchObject({ id: 'slow', overlap: 'skip' })
    expect(running!.skipped).toBeGreaterThan(0)
    expect(running!.prompted).toBeGreaterThanOrEqual(3)
    await host.unschedule('slow')
    const [listed] = await host.schedules()
    expect(listed).toBeUndefined()
    await until(
      async () => {
        const entries = await session.log.read()
        return records(entries, 'harness.input.settled').length === records(entries, 'harness.input').length
      },
      'the last turn to settle',
      30_000,
    )
    const entries = await session.log.read()
    // the turns never overlapped: each input came after the one before settled
    const order = entries.filter((e) => e.record.type === 'harness.input' || e.record.type === 'harness.input.settled')
    order.forEach((e, i) => expect(e.record.type).toBe(i % 2 === 0 ? 'harness.input' : 'harness.input.settled'))
    const times = tickTimes(entries, 'slow')
    // a turn takes 2.5 s and ticks come every 1 s: a tick at least 2 s after the last prompted one each time
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(2_000)
  }, 90_000)

  it('host.schedules() lists a schedule with its next tick; bad options are refused with InvalidScheduleError', async () => {
    const { host } = hosts.start(ticker, 'sched-list')
    await host.schedule({ id: 'mornings', harness: ticker, cron: '0 9 * * 1-5', tz: 'Europe/Berlin', prompt: 'good morning' })
    const [listed] = await host.schedules()
    expect(listed).toMatchObject({ id: 'mornings', cron: '0 9 * * 1-5', tz: 'Europe/Berlin', prompt: 'good morning', overlap: 'queue' })
    expect(listed!.next).toBeGreaterThan(Date.now())
    await expect(host.schedule({ id: 'both', harness: ticker, every: '1m', cron: '* * * * *', prompt: 'x' })).rejects.toBeInstanceOf(
      InvalidScheduleError,
    )
    await expect(host.schedule({ id: 'bad cron', harness: ticker, every: '1m', prompt: 'x' })).rejects.toThrow(/id must be/)
    await expect(host.schedule({ id: 'c', harness: ticker, cron: 'not a cron', prompt: 'x' })).rejects.toThrow(/BullMQ refused/)
    await expect(host.schedule({ id: 'h', harness: 'nobody', every: '1m', prompt: 'x' })).rejects.toThrow(/not one of this host/)
    expect(await host.unschedule('mornings')).toBe(true)
    expect(await host.unschedule('mornings')).toBe(false)
  })

  it('a prompt no tick could send is refused by host.schedule with InvalidScheduleError, and nothing is scheduled', async () => {
    const withSecrets = defineHarness({ name: 'ticker-secrets', adapter: scriptedModel([]), secrets: () => ({ KEY: SECRET }) })
    const { host } = hosts.start(withSecrets, 'sched-refuse')
    const big = 'x'.repeat(300 * 1024)
    const tooBig = host.schedule({ id: 'big', harness: withSecrets, every: '1s', prompt: big })
    await expect(tooBig).rejects.toBeInstanceOf(InvalidScheduleError)
    await expect(tooBig).rejects.toMatchObject({ code: 'invalid_schedule', cause: { code: 'value_too_large' } })
    await expect(tooBig).rejects.toThrow(/Schedule "big": every tick would be refused: Prompt .* over the limit/)
    // a prompt holding a session secret is what prompt refuses too (R6)
    await expect(host.schedule({ id: 'leak', harness: withSecrets, every: '1s', prompt: `use ${SECRET}` })).rejects.toMatchObject({
      code: 'invalid_schedule',
      cause: { code: 'secret_in_value' },
    })
    expect(await host.schedules()).toEqual([])
  })

  it("a tick that fails shows its error in host.schedules() and warns with the schedule's id; the next good tick clears it", async () => {
    // the resolver answers host.schedule's check, then fails every tick until it is back up
    let resolverCalls = 0
    let resolverBack = false
    const flaky = defineHarness({
      name: 'ticker-flaky',
      adapter: scriptedModel(Array.from({ length: 100 }, () => ({ text: 'ticked' }))),
      secrets: () => {
        if (++resolverCalls > 1 && !resolverBack) throw new Error('vault down')
        return { KEY: SECRET }
      },
    })
    const warnings: Array<Record<string, unknown>> = []
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) })
    const host = createHarnessHost({ redis: hosts.url(), harnesses: [flaky], prefix: uniquePrefix('sched-fail'), logger })
    const workers = host.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
    hosts.defer(() => host.close())
    hosts.defer(() => workers.close())
    await host.schedule({ id: 'flaky', harness: flaky, every: '1s', prompt: 'tick' })
    await until(async () => (await host.schedules())[0]?.lastError !== undefined, 'a failed tick in host.schedules()', 30_000)
    const [failing] = await host.schedules()
    expect(failing!.prompted).toBe(0)
    expect(failing!.lastError!.message).toMatch(/secrets resolver failed/)
    expect(failing!.lastError!.at).toBeGreaterThan(Date.now() - 30_000)
    const warned = warnings.find((w) => w.schedule === 'flaky' && /schedule tick failed/.test(String(w.msg)))
    expect(warned).toMatchObject({ level: 40, schedule: 'flaky', sessionId: 'schedule-flaky' })
    resolverBack = true
    await until(
      async () => {
        const [s] = await host.schedules()
        return s !== undefined && s.prompted > 0 && s.lastError === undefined
      },
      'a good tick to clear the error',
      30_000,
    )
    await host.unschedule('flaky')
  }, 90_000)
})
