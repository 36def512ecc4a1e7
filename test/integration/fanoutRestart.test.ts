// Fan-out across a Redis restart (R23, R24, docs/fan-out.md): a parent parked on 3 child calls and 3
// child agents, each child parked in step.waitForEvent, while Redis is SIGKILLed and restarted from
// its AOF. The tree, the wait sets and the child sessions come back; the events wake the children and
// the parent completes with every result in order, each side effect once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RedisServerHandle } from '../../src/testing/index.js'
import { agents, nester, researcher } from '../fixtures/fanout.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'
import { startPrivateRedis } from '../rig.js'

describe('fan-out across a Redis restart', () => {
  const hosts = useInProcessHosts()
  let provider: TestProvider
  let server: RedisServerHandle
  beforeAll(async () => {
    provider = await startProvider(10)
    process.env.PROVIDER_URL = provider.url
    server = await startPrivateRedis()
  })
  afterAll(async () => {
    await provider?.close()
    await server?.stop()
  })

  it('R23 R24 Redis SIGKILLed and restarted from its AOF while 3 child calls and 3 child agents wait: the parent completes, each side effect once', async () => {
    const { host } = hosts.start([agents, researcher, nester], 'fanout-aof', { redis: server.url, concurrency: 6 })
    const session = host.open(agents, { sessionId: 'aof-crew' })
    const running = session.runTool(
      { name: 'crew', input: { tools: 3, agents: 3, wait: true }, toolCallId: 'c' },
      { timeoutMs: patient(60_000) },
    )
    running.catch(() => {})
    // the tree: 3 leaves parked in their waits, 3 child agents whose turns are open
    const waiting = async () => {
      const [root] = await host.tree('aof-crew')
      const leaves = root?.children.filter((c) => c.tool === 'leaf' && c.status === 'parked').length ?? 0
      const open = root?.children.filter((c) => c.agent?.status === 'open').length ?? 0
      return leaves === 3 && open === 3
    }
    await until(waiting, '3 child calls and 3 child agents waiting', patient(30_000))
    // the child agents' own calls wait for their events too
    await until(
      async () => (await host.turns({ harness: 'fanout-researcher', status: 'open' })).items.length === 3,
      'three child turns open',
      patient(30_000),
    )
    await new Promise((r) => setTimeout(r, 500))
    await server.kill()
    await new Promise((r) => setTimeout(r, 300))
    await server.restart()
    for (const n of [0, 1, 2, 1000, 1001, 1002]) {
      await until(
        async () => (await host.sendEvent({ event: 'fanout.go', key: `k${n}` }).catch(() => ({ status: 'error' }))).status !== 'error',
        `event k${n} sent`,
        patient(20_000),
      )
    }
    expect(await running).toEqual([0, 2, 4, 'agent 1000', 'agent 1001', 'agent 1002'])
    const keys = new Map<number, Set<string>>()
    for (const s of provider.starts) keys.set(s.n, (keys.get(s.n) ?? new Set()).add(s.tenant))
    expect([...keys.keys()].sort((a, b) => a - b)).toEqual([0, 1, 2, 1000, 1001, 1002])
    expect([...keys.values()].every((k) => k.size === 1)).toBe(true)
  })
})
