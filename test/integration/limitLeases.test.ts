// A worker paused (SIGSTOP) past its lease (R17, docs/limits.md): its slot went to another call and
// its job to another worker. Resumed, it starts no new step and no model call, and what it gives
// back on its way out is its own slot only, never the one the call's new attempt holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { leasedStubborn, leasedTool, leasedTurn, leaseKeys } from '../fixtures/limitLeases.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'
import { patient } from '../helpers/patience.js'

const LOCK_LOST = 'attempt lost its job lock to another worker; it stopped before its next side effect and wrote nothing more'
const TURN_LOCK_LOST = 'turn attempt lost its job lock to another worker; it made no model call and wrote nothing more'

describe('R17 a worker paused past its lease', () => {
  const ctx = useWorkerProcesses({
    label: 'lease',
    harnesses: [leasedTool, leasedTurn, leasedStubborn],
    module: 'test/fixtures/limitLeases.ts',
    workers: 0,
  })
  let provider: TestProvider
  beforeAll(async () => {
    provider = await startProvider(2_000)
  })
  afterAll(async () => provider?.close())

  /** The one process started with the pause point, alone while its work starts; paused there with SIGSTOP. */
  async function pausedZombie() {
    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    const keys = leaseKeys(ctx.prefix)
    await ctx.redis.del(keys.paused, keys.go, keys.model)
    const zombie = await ctx.spawn({ concurrency: 4, env: { PAUSE_POINT: '1', PROVIDER_URL: provider.url } })
    ctx.workers.push(zombie)
    return {
      zombie,
      keys,
      async pause() {
        await until(async () => (await ctx.redis.exists(keys.paused)) === 1, 'the zombie at its pause point', 20_000)
        zombie.proc.kill('SIGSTOP')
        ctx.workers.push(await ctx.spawn({ concurrency: 4, env: { PROVIDER_URL: provider.url } }))
      },
      async resume() {
        await ctx.redis.set(keys.go, '1')
        zombie.proc.kill('SIGCONT')
      },
    }
  }

  it("R17 resumed, a tool attempt starts no new step and gives back no slot but its own: the call's new attempt keeps its slot, the limit of 1 holds", async () => {
    provider.reset()
    const z = await pausedZombie()
    const first = ctx.host
      .open(leasedTool, { sessionId: 'lease-a' })
      .runTool({ name: 'twoRequests', input: { n: 1 }, toolCallId: 'a' }, { timeoutMs: patient(120_000) })
    await z.pause()
    // the call runs again on the other worker (its step a is kept): its step b is under way
    await until(async () => provider.starts.some((s) => s.tenant === 'b' && s.n === 1), "the new attempt's step b", 30_000)
    // a second call waits for the slot the new attempt holds; then the zombie wakes
    const second = ctx.host
      .open(leasedTool, { sessionId: 'lease-b' })
      .runTool({ name: 'twoRequests', input: { n: 2 }, toolCallId: 'b' }, { timeoutMs: patient(120_000) })
    await z.resume()
    expect(await first).toBe('ok 1 ok 1')
    expect(await second).toBe('ok 2 ok 2')
    await z.zombie.waitFor((l) => l.toolCallId === 'a' && l.msg === LOCK_LOST, 20_000)
    // step b of the first call was sent once (by the new attempt), and never beside another request
    expect(provider.starts.filter((s) => s.n === 1).map((s) => s.tenant)).toEqual(['a', 'b'])
    expect(provider.maxInFlight).toBe(1)
  }, 120_000)

  it('R17 resumed, a turn attempt makes no model call: the worker that took its job over made the only one', async () => {
    const z = await pausedZombie()
    const session = ctx.host.open(leasedTurn, { sessionId: 'lease-turn' })
    const { inputId } = await session.prompt('hi')
    await z.pause()
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed', text: 'hello' })
    await z.resume()
    await until(
      async () => Number(await ctx.redis.get(z.keys.model)) > 1 || z.zombie.lines.some((l) => l.msg === TURN_LOCK_LOST),
      'the zombie to call the model or stop',
      20_000,
    )
    expect(Number(await ctx.redis.get(z.keys.model))).toBe(1)
    expect(z.zombie.lines.find((l) => l.msg === TURN_LOCK_LOST)).toMatchObject({
      level: 40,
      sessionId: 'lease-turn',
      inputId,
      err: { code: 'lock_lost' },
    })
  }, 120_000)

  it('R17 code still running after its turn was aborted holds its slot; its worker SIGKILLed, the slot comes back by its lease expiry', async () => {
    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    const keys = leaseKeys(ctx.prefix)
    await ctx.redis.del(keys.stubborn)
    const worker = await ctx.spawn({ concurrency: 4, env: { PROVIDER_URL: provider.url } })
    ctx.workers.push(worker)
    const session = ctx.host.open(leasedStubborn, { sessionId: 'lease-stubborn' })
    const { inputId } = await session.prompt('go')
    await until(async () => (await ctx.redis.exists(keys.stubborn)) === 1, 'the stubborn tool running')
    await session.abort(inputId, 'stop')
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'aborted' })
    const running = async () => (await ctx.host.stats()).limits.find((l) => l.harness === leasedStubborn.name)?.running ?? 0
    // the aborted call's code runs on in the worker: its slot stays taken (renewed) past a lease
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(await running()).toBe(1)
    await worker.kill('SIGKILL')
    const killedAt = Date.now()
    await until(async () => (await running()) === 0, 'the slot back by its lease expiry', 10_000)
    expect(Date.now() - killedAt).toBeLessThanOrEqual(3_000)
  }, 60_000)
})
