// A limit's slots (R17, docs/limits.md) while code still runs, what a limit leaves in Redis, and its
// key names: in-process hosts, tools that count their own calls in flight.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, ToolCallError, withTimeout, type HarnessHost, type Limit, type Session } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'
import { rigClient } from '../rig.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A tool that ignores its abortSignal: it runs `ms` whatever happens (for ever with -1), counting calls in flight. */
function stubbornTool(name = 'stubborn') {
  const counts = { inFlight: 0, most: 0, ended: 0 }
  const tool = toolDefinition({
    name,
    description: 'talks to a provider, ignores its abort signal',
    inputSchema: z.object({ ms: z.number() }),
  }).server(async ({ ms }) => {
    counts.most = Math.max(counts.most, ++counts.inFlight)
    try {
      await (ms < 0 ? new Promise(() => {}) : sleep(ms))
      return 'done'
    } finally {
      counts.inFlight--
      counts.ended++
    }
  })
  return { tool, counts }
}

/** A turn whose model calls `stubborn` `n` times at once, each running `ms`. */
const stubbornTurn = (n: number, ms: number) =>
  scriptedModel([{ toolCalls: Array.from({ length: n }, (_, i) => ({ name: 'stubborn', input: { ms }, id: `c${i}` })) }, { text: 'done' }])

describe('R17 a slot is held until the tool code settles', () => {
  const hosts = useInProcessHosts()

  /** Two calls of a turn running (limit 2), the turn ended by `end` while they run on; then two more calls. */
  async function endedWhileRunning(label: string, end: (host: HarnessHost, session: Session, inputId: string) => Promise<unknown>) {
    const { tool, counts } = stubbornTool()
    const harness = defineHarness({
      name: `slots-${label}`,
      adapter: stubbornTurn(2, 1_500),
      tools: [tool],
      limits: { tools: { stubborn: { concurrency: 2 } } },
    })
    const { host } = hosts.start(harness, label, { concurrency: 10 })
    const session = host.open(harness, { sessionId: `${label}-turn` })
    const { inputId } = await session.prompt('go')
    await until(async () => counts.inFlight === 2, 'both calls running')
    await end(host, session, inputId)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'aborted' })
    // two more calls of the limited tool: they start only once the two aborted ones' code has ended
    const more = await Promise.all(
      [0, 1].map((i) => host.open(harness, { sessionId: `${label}-more-${i}` }).runTool({ name: 'stubborn', input: { ms: 100 } })),
    )
    expect(more).toEqual(['done', 'done'])
    expect(counts.ended).toBe(4)
    expect(counts.most).toBe(2)
  }

  it('R17 an aborted turn whose tool ignores its abort signal keeps its slots until the tool ends: no call starts beyond the limit', async () => {
    await endedWhileRunning('abort', (_host, session, inputId) => session.abort(inputId, 'stop'))
  })

  it('R17 host.cancel (bulk) of turns whose tools ignore the signal: their slots are held until the tools end', async () => {
    await endedWhileRunning('bulk', async (host) => expect(await host.cancel({ status: 'open' })).toEqual({ count: 1 }))
  })

  it('R17 a call past its tool timeout keeps its slot until its code ends; code that never ends gives it back one timeout later', async () => {
    const { tool, counts } = stubbornTool()
    const harness = defineHarness({
      name: 'slots-timeout',
      adapter: scriptedModel([]),
      tools: [withTimeout(tool, 500)],
      limits: { tools: { stubborn: { concurrency: 1 } } },
    })
    const { host } = hosts.start(harness, 'slots-timeout', { concurrency: 10 })
    const run = (id: string, ms: number) => host.open(harness, { sessionId: id }).runTool({ name: 'stubborn', input: { ms } })
    // the first call times out at 500 ms but runs 800 ms: the second starts after that, never beside it
    const first = run('timeout-1', 800).catch((e: unknown) => e)
    await until(async () => counts.inFlight === 1, 'the first call running')
    const second = run('timeout-2', 50)
    expect(await first).toBeInstanceOf(ToolCallError)
    expect(((await first) as ToolCallError).toolError).toMatchObject({ code: 'timeout' })
    expect(await second).toBe('done')
    expect(counts.most).toBe(1)
    expect(counts.ended).toBe(2)
    // code that never settles: its slot comes back one tool timeout after its attempt ended (500 + 500 ms)
    const hung = run('timeout-hung', -1).catch((e: unknown) => e)
    await until(async () => counts.inFlight === 1, 'the hung call running')
    const started = Date.now()
    const after = run('timeout-after', 50)
    expect(((await hung) as ToolCallError).toolError).toMatchObject({ code: 'timeout' })
    expect(await after).toBe('done')
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)
  })
})

describe('R17 what a limit leaves in Redis, and its key names', () => {
  const hosts = useInProcessHosts()

  it("R17 a key's rate and slot state expires once idle: N keys used once leave no key without expiry, and stats list none after the window", async () => {
    const tool = toolDefinition({ name: 'echo', description: 'echo', inputSchema: z.object({ tenant: z.string() }) }).server(
      async ({ tenant }) => tenant,
    )
    const limit: Limit = { concurrency: 2, rate: { limit: 5, per: 400 }, key: (input) => (input as { tenant: string }).tenant }
    const harness = defineHarness({
      name: 'slots-expiry',
      adapter: scriptedModel([]),
      tools: [tool],
      durability: { lockMs: 1_000, stalledMs: 500 },
      limits: { tools: { echo: limit } },
    })
    const { host, prefix, url } = hosts.start(harness, 'slots-expiry', { concurrency: 10 })
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const tenants = Array.from({ length: 30 }, (_, i) => `tenant-${i}`)
    await Promise.all(tenants.map((t) => host.open(harness, { sessionId: `exp-${t}` }).runTool({ name: 'echo', input: { tenant: t } })))
    const limitKeys = async () => redis.keys(`${prefix}:{limit:*`)
    await until(async () => (await host.stats()).limits.every((l) => l.running === 0), 'the releases to land')
    expect((await host.stats()).limits.map((l) => l.key).sort()).toEqual([...tenants].sort())
    const used = await limitKeys()
    expect(used.length).toBeGreaterThan(tenants.length)
    const ttls = await Promise.all(used.map((k) => redis.pttl(k)))
    expect(used.filter((_, i) => ttls[i]! < 0)).toEqual([])
    // the window (400 ms) and a lease (1 s) later, nothing of them is left
    await until(async () => (await limitKeys()).length === 0, 'the state to expire', 5_000)
    expect((await host.stats()).limits).toEqual([])
  })

  it("limit keys are encoded one to one: 'Ā' and '\\x10'+'0' get their own slots, each limited to 1, and run at once", async () => {
    const started = new Set<string>()
    const tool = toolDefinition({ name: 'meet', description: 'waits for the other', inputSchema: z.object({ tenant: z.string() }) }).server(
      async ({ tenant }) => {
        started.add(tenant)
        const until = Date.now() + patient(2_000)
        while (started.size < 2 && Date.now() < until) await sleep(20)
        return started.size === 2 ? 'together' : 'alone'
      },
    )
    const harness = defineHarness({
      name: 'slots-keys',
      adapter: scriptedModel([]),
      tools: [tool],
      limits: { tools: { meet: { concurrency: 1, key: (input) => (input as { tenant: string }).tenant } } },
    })
    const { host } = hosts.start(harness, 'slots-keys', { concurrency: 10 })
    const tenants = ['Ā', '\x10' + '0']
    const results = await Promise.all(
      tenants.map((tenant, i) => host.open(harness, { sessionId: `keys-${i}` }).runTool({ name: 'meet', input: { tenant } })),
    )
    expect(results).toEqual(['together', 'together'])
    expect((await host.stats()).limits.map((l) => l.key).sort()).toEqual([...tenants].sort())
  })
})
