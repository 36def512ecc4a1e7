// Flow control at the sizes (R17, docs/limits.md): four worker processes at concurrency 20 on a
// 3-master Cluster (DH_SHARDS=3: the sessions' queues spread over the masters, each limit lives on its
// own slot), 200 calls of a limited tool against a test provider; then the same with workers SIGKILLed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { concurrent, keyed, rated } from '../fixtures/limits.js'
import { useWorkerProcesses, type WorkerProcessesContext } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'
import { callsOf, expectLimitsIdle, expectSmallFirst, grantsOf, maxIn, runCalls } from '../helpers/limitRuns.js'
import type { WorkerProcess } from '../helpers/workerProcess.js'

const WORKERS = 4
const CONCURRENCY = 20
const tenants = () => [...callsOf(180, 'big'), ...callsOf(20, 'small').map(({ n }) => ({ tenant: 'small', n: 1000 + n }))]

describe('limits on a Cluster, four worker processes', () => {
  const ctx = useWorkerProcesses({
    label: 'cl-limits',
    harnesses: [concurrent, rated, keyed],
    module: 'test/fixtures/limits.ts',
    workers: 0,
  })
  let provider: TestProvider
  /** Every worker process of the block, killed ones too (their log lines hold the starts they were granted). */
  const ever: WorkerProcess[] = []
  const spawn = async () => {
    const worker = await ctx.spawn({ concurrency: CONCURRENCY, env: { PROVIDER_URL: provider.url } })
    ever.push(worker)
    return worker
  }
  beforeAll(async () => {
    provider = await startProvider(40)
    for (let i = 0; i < WORKERS; i++) ctx.workers.push(await spawn())
  })
  afterAll(async () => provider?.close())

  /** While `run` goes on: SIGKILLs a worker once `at` calls have started, and starts another in its place. */
  async function withKills(c: WorkerProcessesContext, run: Promise<unknown[]>, at: number[]): Promise<unknown[]> {
    for (const starts of at) {
      await until(async () => provider.starts.length >= starts, `${starts} calls started`, 120_000)
      await c.workers.shift()!.kill('SIGKILL')
      c.workers.push(await spawn())
    }
    return run
  }

  it('R17 concurrency 5: 200 calls, the provider never sees more than 5 at once', async () => {
    provider.reset()
    expect(await runCalls({ host: ctx.host, provider }, concurrent, 'c', callsOf(200))).toHaveLength(200)
    expect(provider.maxInFlight).toBe(5)
    await expectLimitsIdle(ctx.host, concurrent)
  })

  it('R17 rate 10 per 1s: 200 calls, no 1-second window holds more than 10 starts', async () => {
    provider.reset()
    expect(await runCalls({ host: ctx.host, provider }, rated, 'r', callsOf(200))).toHaveLength(200)
    expect(grantsOf(ever, 'r')).toHaveLength(200)
    expect(maxIn(grantsOf(ever, 'r'), 1_000)).toBeLessThanOrEqual(10)
    await expectLimitsIdle(ctx.host, rated)
  })

  it("R17 keyed by tenant (180 and 20 calls): the small tenant's calls all finish before the big tenant's last 100 begin", async () => {
    provider.reset()
    expect(await runCalls({ host: ctx.host, provider }, keyed, 'k', tenants())).toHaveLength(200)
    expectSmallFirst(provider, 'small', 'big', 100)
    await expectLimitsIdle(ctx.host, keyed)
  })

  it('R17 with workers SIGKILLed mid-run: every call completes, each limit holds, no slot stays taken', async () => {
    provider.reset()
    await withKills(ctx, runCalls({ host: ctx.host, provider }, concurrent, 'ck', callsOf(200)), [30, 120])
    expect(new Set(provider.ends.map((e) => e.n)).size).toBe(200)
    expect(provider.maxInFlight).toBeLessThanOrEqual(5)
    await expectLimitsIdle(ctx.host, concurrent)

    provider.reset()
    await withKills(ctx, runCalls({ host: ctx.host, provider }, rated, 'rk', callsOf(200)), [50])
    expect(new Set(provider.starts.map((e) => e.n)).size).toBe(200)
    expect(maxIn(grantsOf(ever, 'rk'), 1_000)).toBeLessThanOrEqual(10)
    await expectLimitsIdle(ctx.host, rated)

    provider.reset()
    await withKills(ctx, runCalls({ host: ctx.host, provider }, keyed, 'kk', tenants()), [40])
    expect(new Set(provider.ends.map((e) => `${e.tenant}${e.n}`)).size).toBe(200)
    for (const tenant of ['big', 'small']) {
      // per tenant: never more than 5 at once (replayed from the provider's log)
      let open = 0
      let most = 0
      const events = [
        ...provider.starts.filter((s) => s.tenant === tenant).map((s) => ({ at: s.at, d: 1 })),
        ...provider.ends.filter((s) => s.tenant === tenant).map((s) => ({ at: s.at, d: -1 })),
      ].sort((a, b) => a.at - b.at || a.d - b.d)
      for (const e of events) most = Math.max(most, (open += e.d))
      expect(most).toBeLessThanOrEqual(5)
    }
    await expectLimitsIdle(ctx.host, keyed)
  })
})
