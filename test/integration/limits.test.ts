// Flow control (R17, docs/limits.md) on one Redis: limited calls through two worker processes at
// concurrency 20 against a test provider. The Cluster suite runs the sizes on 3 masters with
// four processes (test/cluster/limits.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { metricsText } from '../../src/telemetry/index.js'
import { concurrent, keyed, rated } from '../fixtures/limits.js'
import { quiet, useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'
import { callsOf, expectLimitsIdle, expectSmallFirst, runCalls } from '../helpers/limitRuns.js'
import { createHarnessHost, ConfigError, defineHarness } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'

describe('limits across worker processes', () => {
  const harnesses = [concurrent, rated, keyed]
  const ctx = useWorkerProcesses({ label: 'limits', harnesses, module: 'test/fixtures/limits.ts', workers: 0 })
  let provider: TestProvider
  beforeAll(async () => {
    provider = await startProvider(40)
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
    expect(provider.maxStartsIn(1_000)).toBeLessThanOrEqual(10)
    // and the limit let calls through as fast as it allows: 25 starts need at least 2 windows, not many more
    const span = Math.max(...provider.starts.map((s) => s.sent)) - Math.min(...provider.starts.map((s) => s.sent))
    expect(span).toBeGreaterThanOrEqual(2_000)
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
    const napper = (await ctx.host.stats()).limits.find((l) => l.harness === concurrent.name && l.limit === 'tool:napper')
    expect(napper).toMatchObject({ running: 0, waiting: 0 })
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
    void createHarnessHost
    void quiet
  })
})
