// Fan-out under SIGKILL (R23, R24, docs/fan-out.md): a tool fans out 200 child tool calls over 3
// worker processes of concurrency 2, two of them SIGKILLed during the fan-out. Each child's side
// effect is counted at the test's own provider by its step's idempotency key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ToolCallError } from '../../src/index.js'
import { SessionLog } from '../../src/log/index.js'
import { agents, fanout, researcher } from '../fixtures/fanout.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'

describe('fan-out across worker processes with SIGKILLs', () => {
  const ctx = useWorkerProcesses({
    label: 'fanout-kill',
    harnesses: [fanout, agents, researcher],
    module: 'test/fixtures/fanout.ts',
    workers: 0,
  })
  let provider: TestProvider
  const spawn = async () => ctx.workers.push(await ctx.spawn({ concurrency: 2, env: { PROVIDER_URL: provider.url } }))
  beforeAll(async () => {
    provider = await startProvider(40)
    for (let i = 0; i < 3; i++) await spawn()
  })
  afterAll(async () => provider?.close())

  const treeCount = (sessionId: string, root: string) =>
    ctx.redis.hget(new SessionLog(ctx.redis, ctx.prefix, sessionId).stream.keys.tree, `${root}\0n`).then(Number)

  it('R23 R24 200 children over 3 workers of concurrency 2, SIGKILLs during the fan-out: each side effect once, results in order, maxConcurrent 3 held, the parent parked', async () => {
    provider.reset()
    const session = ctx.host.open(fanout, { sessionId: 'kill-200' })
    const running = session.runTool({ name: 'fanner', input: { count: 200 }, toolCallId: 'root' }, { timeoutMs: patient(180_000) })
    for (const at of [40, 110]) {
      await until(async () => provider.starts.length >= at, `${at} children under way`, patient(60_000))
      await ctx.workers.shift()!.kill('SIGKILL')
      await spawn()
    }
    const result = await running
    expect(result).toEqual(Array.from({ length: 200 }, (_, n) => n * 2))
    // every child's effect under one idempotency key, whatever ran it again (R23)
    const keysOf = new Map<number, Set<string>>()
    for (const s of provider.starts) keysOf.set(s.n, (keysOf.get(s.n) ?? new Set()).add(s.tenant))
    expect(keysOf.size).toBe(200)
    expect([...keysOf.values()].every((keys) => keys.size === 1)).toBe(true)
    expect(new Set(provider.starts.map((s) => s.tenant)).size).toBe(200)
    // the tree's width across the three workers (R24)
    expect(provider.maxInFlight).toBeLessThanOrEqual(3)
    expect(await treeCount('kill-200', 'root')).toBe(200)
    // the parent waited parked (no worker slot: the 6 slots ran 200 children beside it)
    const parks = await session.log.read({ types: ['harness.tool.suspended'] })
    expect(
      parks.some(
        (e) =>
          (e.record as { toolCallId: string; kind: string }).toolCallId === 'root' && (e.record as { kind: string }).kind === 'children',
      ),
    ).toBe(true)
  })

  it('R23 200 child tool calls and 20 child agents over 3 workers, SIGKILLs during the fan-out: each side effect once, results in order, the tools 3 at once, the parent parked', async () => {
    provider.reset()
    const session = ctx.host.open(agents, { sessionId: 'kill-crew' })
    const running = session.runTool(
      { name: 'crew', input: { tools: 200, agents: 20 }, toolCallId: 'crew' },
      { timeoutMs: patient(180_000) },
    )
    for (const at of [30, 120]) {
      await until(async () => provider.starts.length >= at, `${at} children under way`, patient(60_000))
      await ctx.workers.shift()!.kill('SIGKILL')
      await spawn()
    }
    const result = await running
    expect(result).toEqual([...Array.from({ length: 200 }, (_, n) => n * 2), ...Array.from({ length: 20 }, (_, j) => `agent ${1000 + j}`)])
    // every side effect (200 leaves, one per child agent) under one idempotency key each (R23)
    const keysOf = new Map<number, Set<string>>()
    for (const s of provider.starts) keysOf.set(s.n, (keysOf.get(s.n) ?? new Set()).add(s.tenant))
    expect(keysOf.size).toBe(220)
    expect([...keysOf.values()].every((keys) => keys.size === 1)).toBe(true)
    // the tree's width held for the tool children across the three workers (R24); a child agent's own calls are its turn's
    expect(maxOpen(provider, (n) => n < 1000)).toBeLessThanOrEqual(3)
    const parks = await session.log.read({ types: ['harness.tool.suspended'] })
    expect(parks.some((e) => (e.record as { toolCallId: string; kind: string }).toolCallId === 'crew')).toBe(true)
  })

  it('R24 maxCalls holds after a SIGKILL of the worker that counted: a rerun of the parent counts nothing again', async () => {
    provider.reset()
    const session = ctx.host.open(fanout, { sessionId: 'kill-calls' })
    const running = session
      .runTool({ name: 'fanner', input: { count: 260 }, toolCallId: 'many' }, { timeoutMs: patient(180_000) })
      .catch((e: unknown) => e)
    await until(async () => (await treeCount('kill-calls', 'many')) >= 20, 'children counted', patient(60_000))
    // the parent's worker is the one whose log names the call; kill every worker to be sure to cut it
    for (const worker of ctx.workers.splice(0)) await worker.kill('SIGKILL')
    for (let i = 0; i < 3; i++) await spawn()
    const refused = await running
    expect(refused).toBeInstanceOf(ToolCallError)
    expect((refused as ToolCallError).message).toContain('maxCalls (250)')
    expect(await treeCount('kill-calls', 'many')).toBe(250)
  })
})

/** The most requests open at once among those whose n passes `which`, from the provider's starts and ends. */
function maxOpen(provider: TestProvider, which: (n: number) => boolean): number {
  const edges = [
    ...provider.starts.filter((s) => which(s.n)).map((s) => ({ at: s.at, d: 1 })),
    ...provider.ends.filter((e) => which(e.n)).map((e) => ({ at: e.at, d: -1 })),
  ].sort((a, b) => a.at - b.at || a.d - b.d)
  let open = 0
  let most = 0
  for (const e of edges) most = Math.max(most, (open += e.d))
  return most
}
