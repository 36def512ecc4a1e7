// Fan-out on a 3-master Cluster (R23, R24, docs/fan-out.md): child agents' sessions land in other
// shards than their root (their tree places and spend roll-ups are single-key writes to the root's
// slot), and a cancel's message reaches the worker running a child through the shard's channel.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { childSessionId } from '../../src/fanout/index.js'
import { SessionLog } from '../../src/log/index.js'
import { agents, fanout, nester, researcher } from '../fixtures/fanout.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'
import { until } from '../helpers/log.js'

/** How long a running child's first step takes: far longer than a cancel takes to reach it under load. */
const HOLD_MS = 5_000

describe('fan-out on a Cluster, two worker processes', () => {
  const ctx = useWorkerProcesses({
    label: 'cl-fanout',
    harnesses: [fanout, agents, researcher, nester],
    module: 'test/fixtures/fanout.ts',
    workers: 0,
  })
  let provider: TestProvider
  beforeAll(async () => {
    provider = await startProvider(10)
    for (let i = 0; i < 2; i++) ctx.workers.push(await ctx.spawn({ concurrency: 4, env: { PROVIDER_URL: provider.url } }))
  })
  afterAll(async () => provider?.close())

  it('R23 R24 20 child calls and 6 child agents across shards: results in order, each effect once, the tree counted at its root', async () => {
    provider.reset()
    const session = ctx.host.open(agents, { sessionId: 'cl-crew' })
    const result = await session.runTool({ name: 'crew', input: { tools: 20, agents: 6 }, toolCallId: 'root' }, { timeoutMs: 120_000 })
    expect(result).toEqual([...Array.from({ length: 20 }, (_, n) => n * 2), ...Array.from({ length: 6 }, (_, j) => `agent ${1000 + j}`)])
    expect(new Set(provider.starts.map((s) => s.tenant)).size).toBe(26)
    expect(provider.starts).toHaveLength(26)
    expect(Number(await ctx.redis.hget(new SessionLog(ctx.redis, ctx.prefix, 'cl-crew').stream.keys.tree, 'root\0n'))).toBe(26)
    const [root] = await ctx.host.tree('cl-crew')
    expect(root!.children.filter((c) => c.agent?.outcome === 'completed')).toHaveLength(6)
    expect(root!.children.find((c) => c.toolCallId === 'root.agent-2')!.agent!.sessionId).toBe(childSessionId('cl-crew', 'root.agent-2'))
  })

  it("R24 an agent that starts itself stops at maxDepth, its children's places counted in the root session's slot", async () => {
    const session = ctx.host.open(agents, { sessionId: 'cl-nest' })
    expect(await session.runTool({ name: 'nest', input: { level: 0 }, toolCallId: 'n' }, { timeoutMs: 60_000 })).toMatch(
      /^refused at 3: .*maxDepth \(2\)/,
    )
  })

  it('cancel-siblings stops the running others through the Cluster channel: they land cancelled, no step of theirs after', async () => {
    provider.reset()
    const session = ctx.host.open(fanout, { sessionId: 'cl-cancel' })
    const started = Date.now()
    const result = await session.runTool(
      { name: 'fanner', input: { count: 3, onFailure: 'cancel-siblings', failAt: 0, hold: HOLD_MS }, toolCallId: 'cr' },
      { timeoutMs: 60_000 },
    )
    expect(result).toMatchObject({ failed: 'tool_error' })
    const codes = async () =>
      (await session.log.read({ types: ['harness.tool.result'] }))
        .map((e) => e.record as { toolCallId: string; error?: { code?: string } })
        .filter((r) => r.toolCallId === 'cr.leaf-1' || r.toolCallId === 'cr.leaf-2')
        .map((r) => r.error?.code)
    await until(async () => (await codes()).length === 2, 'the running children landed', 30_000)
    // landed cancelled, not after their hold: the cancel stopped them
    expect(await codes()).toEqual(['cancelled', 'cancelled'])
    // past their hold: had they gone on, their request would have reached the provider by now
    await new Promise((r) => setTimeout(r, Math.max(0, started + HOLD_MS + 1_000 - Date.now())))
    expect(provider.starts).toHaveLength(0)
  })
})
