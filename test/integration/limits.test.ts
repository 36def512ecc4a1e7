// Flow control (R17, docs/limits.md) on one Redis: limited calls through two worker processes at
// concurrency 20 against a test provider. The Cluster suite runs the sizes on 3 masters with
// four processes (test/cluster/limits.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { metricsText } from '../../src/telemetry/index.js'
import { concurrent, keyed, rated } from '../fixtures/limits.js'
import { quiet, useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'
import { callsOf, expectLimitsIdle, expectSmallFirst, grantsOf, maxIn, runCalls } from '../helpers/limitRuns.js'
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { createHarnessHost, defineHarness, ToolCallError } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { cleanupPrefix, uniquePrefix } from '../rig.js'
import { createDashboard } from '../../src/dashboard/index.js'

describe('limits across worker processes', () => {
  const harnesses = [concurrent, rated, keyed]
  const ctx = useWorkerProcesses({ label: 'limits', harnesses, module: 'test/fixtures/limits.ts', workers: 0 })
  let provider: TestProvider
  beforeAll(async () => {
    // each request takes 100 ms: long enough that 5 are in flight at once even on a loaded machine
    provider = await startProvider(100)
    for (let i = 0; i < 2; i++) ctx.workers.push(await ctx.spawn({ concurrency: 20, env: { PROVIDER_URL: provider.url } }))
  })
  afterAll(async () => provider?.close())

  it('R17 a tool limited to concurrency 5: the provider never sees more than 5 requests at once, and a waiting call logs it', async () => {
    provider.reset()
    const results = await runCalls({ host: ctx.host, provider }, concurrent, 'conc', callsOf(60))
    expect(results).toHaveLength(60)
    expect(provider.starts).toHaveLength(60)
    expect(provider.maxInFlight).toBeLessThanOrEqual(5)
    expect(provider.maxInFlight).toBe(5)
    await expectLimitsIdle(ctx.host, concurrent)
    // some call waited for its slot: the log says so (the timeline shows "waiting for limit")
    const waited = await Promise.all(
      callsOf(60).map(async ({ n }) =>
        (await ctx.host.open(concurrent, { sessionId: `conc-${n}` }).log.read({ types: ['harness.tool.suspended'] })).some(
          (e) => (e.record as { kind?: string }).kind === 'limit',
        ),
      ),
    )
    expect(waited.filter(Boolean).length).toBeGreaterThan(0)
  })

  it('R17 a rate of 10 per second: no 1-second window holds more than 10 starts', async () => {
    provider.reset()
    await runCalls({ host: ctx.host, provider }, rated, 'rate', callsOf(25))
    expect(provider.starts).toHaveLength(25)
    const grants = grantsOf(ctx.workers, 'rate')
    expect(grants).toHaveLength(25)
    expect(maxIn(grants, 1_000)).toBeLessThanOrEqual(10)
    // 25 starts at 10 a second need more than two seconds
    expect(Math.max(...grants) - Math.min(...grants)).toBeGreaterThanOrEqual(2_000)
    await expectLimitsIdle(ctx.host, rated)
  })

  it('R17 keyed by tenant: the small tenant does not wait behind the big one', async () => {
    provider.reset()
    const calls = [...callsOf(60, 'big'), ...callsOf(10, 'small').map(({ n }) => ({ tenant: 'small', n: 1000 + n }))]
    await runCalls({ host: ctx.host, provider }, keyed, 'key', calls)
    expectSmallFirst(provider, 'small', 'big', 30)
    const perTenant = (tenant: string) => provider.starts.filter((s) => s.tenant === tenant).length
    expect([perTenant('big'), perTenant('small')]).toEqual([60, 10])
    await expectLimitsIdle(ctx.host, keyed)
  })

  it('R17 workers SIGKILLed mid-run: every call completes, the limit holds, and no slot stays taken (by lock expiry)', async () => {
    provider.reset()
    const running = runCalls({ host: ctx.host, provider }, concurrent, 'kill', callsOf(60))
    await until(async () => provider.starts.length >= 10, 'calls under way')
    const [first, second] = ctx.workers.splice(0, 2)
    await first!.kill('SIGKILL')
    ctx.workers.push(await ctx.spawn({ concurrency: 20, env: { PROVIDER_URL: provider.url } }))
    await until(async () => provider.starts.length >= 30, 'calls under way again')
    await second!.kill('SIGKILL')
    ctx.workers.push(await ctx.spawn({ concurrency: 20, env: { PROVIDER_URL: provider.url } }))
    const results = await running
    expect(results).toHaveLength(60)
    expect(new Set(provider.ends.map((e) => e.n)).size).toBe(60)
    expect(provider.maxInFlight).toBeLessThanOrEqual(5)
    await expectLimitsIdle(ctx.host, concurrent)
  })

  it('R17 a 3-day sleep inside a limited tool does not hold its slot', async () => {
    provider.reset()
    // napper is limited to concurrency 1: the sleeping call must leave the slot to the next one
    const sleeper = ctx.host.open(concurrent, { sessionId: 'nap-sleeper' })
    void sleeper.runTool({ name: 'napper', input: { tenant: 't', n: 1, sleep: '3d' }, toolCallId: 'sleeper' }).catch(() => {})
    await until(
      async () =>
        (await sleeper.log.read({ types: ['harness.tool.suspended'] })).some((e) => (e.record as { kind?: string }).kind === 'sleep'),
      'the first call sleeping',
    )
    await runCalls(
      { host: ctx.host, provider },
      concurrent,
      'nap',
      [
        { tenant: 't', n: 2 },
        { tenant: 't', n: 3 },
      ],
      'napper',
    )
    expect(provider.starts.map((s) => s.n).sort()).toEqual([2, 3])
    // a key whose state expired once idle is listed no more: idle too
    const napper = async () =>
      (await ctx.host.stats()).limits.find((l) => l.harness === concurrent.name && l.limit === 'tool:napper') ?? { running: 0, waiting: 0 }
    // the last call's release is sent right after its job completes (not awaited): give it a moment to land
    await until(async () => (await napper())?.running === 0, 'the last call released its slot', 10_000)
    expect(await napper()).toMatchObject({ running: 0, waiting: 0 })
  })
})

describe('limits in one process', () => {
  const hosts = useInProcessHosts()
  let provider: TestProvider
  beforeAll(async () => {
    provider = await startProvider(20)
    process.env.PROVIDER_URL = provider.url
  })
  afterAll(async () => provider?.close())

  it('R17 the wait for a limit is a metric histogram, and harness stats list the limit per key', async () => {
    const { host } = hosts.start(keyed, 'limits-metrics', { concurrency: 20 })
    await runCalls({ host, provider }, keyed, 'm', [...callsOf(12, 'a'), ...callsOf(3, 'b').map(({ n }) => ({ tenant: 'b', n: 100 + n }))])
    const { body } = await metricsText(host)
    const count = /harness_limit_wait_seconds_count\{harness="limits-keyed",limit="tool:callProvider"\} (\d+)/.exec(body)
    expect(Number(count?.[1])).toBeGreaterThan(0)
    const keys = (await host.stats()).limits.map((l) => l.key).sort()
    expect(keys).toEqual(['a', 'b'])
    // the dashboard's limits page, for operators only; a key is shown escaped
    await runCalls({ host, provider }, keyed, 'm', [{ tenant: '<b>x</b>', n: 500 }])
    const dashboard = createDashboard({
      host,
      authorize: (r) => ({ user: r.headers.get('x-user') ?? '' }),
      canOperate: (p) => p.user === 'ops',
    })
    expect((await dashboard.request('/limits', { headers: { 'x-user': 'alice' } })).status).toBe(403)
    const page = await (await dashboard.request('/limits', { headers: { 'x-user': 'ops' } })).text()
    expect(page).toContain('tool:callProvider')
    expect(page).toContain('&lt;b&gt;x&lt;/b&gt;')
    expect(page).not.toContain('<b>x</b>')
  })

  it('a key function that throws gives the call the tool error limit_key; the tool does not run', async () => {
    let ran = 0
    const tool = toolDefinition({ name: 'keyed', description: 'x', inputSchema: z.object({}) }).server(async () => ++ran)
    const badKey = defineHarness({
      name: 'limits-bad-key',
      adapter: scriptedModel([]),
      tools: [tool],
      limits: {
        tools: {
          keyed: {
            concurrency: 1,
            key: () => {
              throw new Error('no tenant')
            },
          },
        },
      },
    })
    const { host } = hosts.start(badKey, 'limits-bad-key')
    const refused = await host
      .open(badKey, { sessionId: 'bad-key' })
      .runTool({ name: 'keyed', input: {} })
      .catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ToolCallError)
    expect((refused as ToolCallError).toolError).toMatchObject({ code: 'limit_key' })
    expect((refused as ToolCallError).message).toContain('no tenant')
    expect(ran).toBe(0)
  })

  it('a limit that names no tool of the harness, or a bad bound, is refused with a ConfigError that says what to fix', () => {
    const make = (limits: unknown) => () =>
      defineHarness({ name: 'bad-limits', adapter: scriptedModel([]), tools: keyed.tools, limits: limits as never })
    expect(make({ tools: { nope: { concurrency: 1 } } })).toThrow(ConfigError)
    expect(make({ tools: { nope: { concurrency: 1 } } })).toThrow(/not a tool of the harness/)
    expect(make({ tools: { callProvider: { concurrency: 0 } } })).toThrow(/concurrency must be a positive integer/)
    expect(make({ tools: { callProvider: { rate: { limit: 10, per: 'soon' } } } })).toThrow(/rate.per must be a duration/)
    expect(make({ tools: { callProvider: {} } })).toThrow(/neither concurrency nor rate/)
    expect(make({ tools: { callProvider: { concurrency: 1, key: 'tenant' } } })).toThrow(/key must be a function/)
    expect(() => defineHarness({ name: 'bad-priority', adapter: scriptedModel([]), priority: 0 })).toThrow(/priority must be an integer/)
  })

  it('R17 limits.turns: at most `concurrency` turns run their model call at once, across sessions', async () => {
    let open = 0
    let most = 0
    const base = scriptedModel([{ text: 'hi' }])
    const adapter = {
      ...base,
      async *chatStream(request: Parameters<typeof base.chatStream>[0]) {
        most = Math.max(most, ++open)
        try {
          await new Promise((resolve) => setTimeout(resolve, 30))
          yield* base.chatStream(request)
        } finally {
          open--
        }
      },
    } as typeof base
    const turnsLimited = defineHarness({
      name: 'limits-turns',
      adapter,
      durability: { lockMs: 2_000, stalledMs: 1_000 },
      limits: { turns: { concurrency: 2 } },
    })
    const { host } = hosts.start(turnsLimited, 'limits-turns', { concurrency: 10 })
    const prompts = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => ({ i, ...(await host.open(turnsLimited, { sessionId: `turn-${i}` }).prompt('hello')) })),
    )
    const settled = await Promise.all(prompts.map(({ i, inputId }) => host.open(turnsLimited, { sessionId: `turn-${i}` }).settled(inputId)))
    expect(settled.map((s) => s.outcome)).toEqual(Array(8).fill('completed'))
    expect(most).toBe(2)
    await expectLimitsIdle(host, turnsLimited)
  })

  it("priority: a prompt's priority runs its turn first, and the turn's calls inherit it", async () => {
    const order: string[] = []
    const record = toolDefinition({ name: 'record', description: 'notes the session', inputSchema: z.object({}) }).server(
      async (_input, ctx) => void order.push(String((ctx as { context?: { who?: string } }).context?.who)),
    )
    const prioritized = defineHarness({
      name: 'limits-priority',
      adapter: scriptedModel([{ toolCalls: [{ name: 'record', input: {}, id: 'rec' }] }, { text: 'done' }]),
      tools: [record],
      priority: 100,
    })
    const url = hosts.url()
    const prefix = uniquePrefix('limits-priority')
    hosts.defer(() => cleanupPrefix(url, prefix))
    const host = createHarnessHost({ redis: url, harnesses: [prioritized], prefix, logger: quiet })
    hosts.defer(() => host.close())
    // a backlog at the harness's default, then one prompt at priority 1, before any worker runs
    const inputs = []
    for (let i = 0; i < 8; i++)
      inputs.push({
        sid: `batch-${i}`,
        ...(await host.open(prioritized, { sessionId: `batch-${i}` }).prompt('go', { context: { who: `batch-${i}` } })),
      })
    const urgent = await host.open(prioritized, { sessionId: 'urgent' }).prompt('now', { priority: 1, context: { who: 'urgent' } })
    const workers = host.startWorkers({ concurrency: 1, sweepEveryMs: 0 })
    hosts.defer(() => workers.close())
    await host.open(prioritized, { sessionId: 'urgent' }).settled(urgent.inputId)
    await Promise.all(inputs.map(({ sid, inputId }) => host.open(prioritized, { sessionId: sid }).settled(inputId)))
    expect(order[0]).toBe('urgent')
    expect(order).toHaveLength(9)
    const queue = host.queues().find((q) => q.kind === 'tools')!.queue
    const jobs = await queue.getJobs(['completed'])
    const priorities = (sid: string) => jobs.filter((j) => j.data.sessionId === sid).map((j) => j.opts.priority)
    expect(priorities('urgent')).toEqual([1])
    expect(priorities('batch-0')).toEqual([100])
    await expect(host.open(prioritized, { sessionId: 'x' }).prompt('bad', { priority: 0 })).rejects.toThrow(/priority must be an integer/)
  })

  it('priority: a prompt kept waiting in line, or whose turn job was lost, still runs at the priority it was given', async () => {
    const lined = defineHarness({ name: 'limits-lined', adapter: scriptedModel([{ text: 'done' }]), priority: 100 })
    const url = hosts.url()
    const prefix = uniquePrefix('limits-lined')
    hosts.defer(() => cleanupPrefix(url, prefix))
    const host = createHarnessHost({ redis: url, harnesses: [lined], prefix, logger: quiet })
    hosts.defer(() => host.close())
    const turns = host.queues().find((q) => q.kind === 'turns')!.queue
    const priorityOf = async (inputId: string) => (await turns.getJobs()).find((j) => j.data.inputId === inputId)?.opts.priority
    // B waits in line behind A (busy 'queue'): its turn is enqueued only when A's settles
    const session = host.open(lined, { sessionId: 'lined' })
    const a = await session.prompt('first')
    const b = await session.prompt('second', { priority: 3 })
    expect(await priorityOf(b.inputId)).toBeUndefined()
    // C's turn job is lost before any worker ran it: the sweeper adds it again
    const lost = host.open(lined, { sessionId: 'lost' })
    const c = await lost.prompt('third', { priority: 2 })
    const cJob = (await turns.getJobs()).find((j) => j.data.inputId === c.inputId)!
    await cJob.remove()
    expect(await host.sweep({ graceMs: 0 })).toMatchObject([{ kind: 'turn', id: c.inputId }])
    expect(await priorityOf(c.inputId)).toBe(2)
    const workers = host.startWorkers({ concurrency: 1, sweepEveryMs: 0 })
    hosts.defer(() => workers.close())
    await session.settled(a.inputId)
    await session.settled(b.inputId)
    await lost.settled(c.inputId)
    expect(await priorityOf(a.inputId)).toBe(100)
    expect(await priorityOf(b.inputId)).toBe(3)
  })
})
