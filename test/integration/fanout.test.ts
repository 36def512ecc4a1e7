// Fan-out from a durable tool (R23, R24, docs/fan-out.md) in one process: child tool calls, their
// results in order, the tree's limits, cancel-siblings. The multi-process SIGKILL run is in
// fanoutKilled.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ToolCallError } from '../../src/index.js'
import { fanout, fanoutTurn } from '../fixtures/fanout.js'
import { until } from '../helpers/log.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { SessionLog } from '../../src/log/index.js'
import { rigClient } from '../rig.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'

describe('fan-out in one process', () => {
  const hosts = useInProcessHosts()
  let provider: TestProvider
  beforeAll(async () => {
    provider = await startProvider(30)
    process.env.PROVIDER_URL = provider.url
  })
  afterAll(async () => provider?.close())

  it('R23 a tool fans out 20 child calls: results in order, each side effect once, the parent parked while it waits', async () => {
    provider.reset()
    const { host } = hosts.start(fanout, 'fanout-basic', { concurrency: 4 })
    const session = host.open(fanout, { sessionId: 'fan-1' })
    const result = await session.runTool({ name: 'fanner', input: { count: 20 }, toolCallId: 'root' })
    expect(result).toEqual(Array.from({ length: 20 }, (_, n) => n * 2))
    const keys = provider.starts.map((s) => s.tenant)
    expect(new Set(keys).size).toBe(20)
    expect(provider.maxInFlight).toBeLessThanOrEqual(3)
    const suspended = await session.log.read({ types: ['harness.tool.suspended'] })
    expect(suspended.some((e) => (e.record as { toolCallId: string; kind: string }).kind === 'children')).toBe(true)
    // run again: the same children, nothing runs twice (R23)
    const again = await session.runTool({ name: 'fanner', input: { count: 20 }, toolCallId: 'root' })
    expect(again).toEqual(result)
    expect(provider.starts).toHaveLength(20)
  })

  it('R24 a tree value as older versions wrote it (<depth>|<root>|<parent>) reads the same: its child gets the next depth and the same root', async () => {
    const { url, prefix } = hosts.start(fanout, 'fanout-old-values')
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const log = new SessionLog(redis, prefix, 'old-1')
    await redis.hset(log.stream.keys.tree, 'root.a', '1|root|root')
    const limits = { maxDepth: 5, maxCalls: 10, timeoutMs: 60_000 }
    expect(await log.fanout.addChild('root.a.b', 'root.a', limits)).toEqual({ status: 'added', depth: 2, root: 'root' })
    expect(await redis.hget(log.stream.keys.tree, 'root.a.b')).toBe('2|root|')
    expect(await log.fanout.addChild('root.a', 'root', limits)).toEqual({ status: 'exists', depth: 1, root: 'root' })
    expect(await log.fanout.childAtBegin('root.a.b')).toEqual({ root: 'root', depth: 2 })
    expect((await log.fanout.descendants('root')).sort()).toEqual(['root.a', 'root.a.b'])
  })

  it("R24 maxDepth 2 refuses a grandchild's child with the typed error tree_limit", async () => {
    const { host } = hosts.start(fanout, 'fanout-depth')
    const session = host.open(fanout, { sessionId: 'deep-1' })
    const result = await session.runTool({ name: 'deep', input: { level: 0, levels: 5 }, toolCallId: 'deep' })
    expect(result).toMatch(/^refused at 3: .*maxDepth \(2\)/)
  })

  it("R24 maxCalls: a start past the tree's count fails with tree_limit, counted once per child", async () => {
    provider.reset()
    const { host } = hosts.start(fanout, 'fanout-calls', { concurrency: 6 })
    const session = host.open(fanout, { sessionId: 'calls-1' })
    // the 251st start throws in the tool (it does not catch it there): the parent lands the error
    const refused = await session.runTool({ name: 'fanner', input: { count: 251 }, toolCallId: 'big' }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ToolCallError)
    expect((refused as ToolCallError).message).toContain(
      'Tool "leaf" (call big.leaf-250) failed: the tree of call big has started 250 children',
    )
  })

  it('cancel-siblings: one failing child cancels the sleeping others, none of them runs after', async () => {
    provider.reset()
    const { host } = hosts.start(fanout, 'fanout-cancel', { concurrency: 4 })
    const session = host.open(fanout, { sessionId: 'cancel-1' })
    const result = await session.runTool({
      name: 'fanner',
      input: { count: 6, onFailure: 'cancel-siblings', failAt: 5, sleep: '1h' },
      toolCallId: 'cs',
    })
    expect(result).toMatchObject({ failed: 'tool_error' })
    expect(provider.starts).toHaveLength(0)
    const results = await session.log.read({ types: ['harness.tool.result'] })
    const cancelled = results.filter((e) => (e.record as { error?: { code?: string } }).error?.code === 'cancelled')
    expect(cancelled).toHaveLength(5)
  })

  it('cancel-siblings stops the running others: their ctx.abortSignal fires, they land cancelled, no step of theirs starts after', async () => {
    provider.reset()
    const { host } = hosts.start(fanout, 'fanout-cancel-running', { concurrency: 6 })
    const session = host.open(fanout, { sessionId: 'cancel-run-1' })
    // a first step far longer than a cancel takes to reach it under load
    const hold = 4_000
    const started = Date.now()
    const result = await session.runTool({
      name: 'fanner',
      input: { count: 3, onFailure: 'cancel-siblings', failAt: 0, hold },
      toolCallId: 'cr',
    })
    expect(result).toMatchObject({ failed: 'tool_error' })
    const results = async () =>
      (await session.log.read({ types: ['harness.tool.result'] }))
        .map((e) => e.record as { toolCallId: string; error?: { code?: string } })
        .filter((r) => r.toolCallId !== 'cr' && r.toolCallId !== 'cr.leaf-0')
    await until(async () => (await results()).length === 2, 'the two running children landed')
    expect((await results()).map((r) => r.error?.code)).toEqual(['cancelled', 'cancelled'])
    // past their hold: had they gone on, their request would have reached the provider by now
    await new Promise((r) => setTimeout(r, Math.max(0, started + hold + 1_000 - Date.now())))
    expect(provider.starts).toHaveLength(0)
  })

  it('abort of the root input while 50 children sleep: every child lands cancelled at once, none runs after', async () => {
    provider.reset()
    const { host } = hosts.start(fanoutTurn, 'fanout-abort', { concurrency: 8 })
    const session = host.open(fanoutTurn, { sessionId: 'abort-1' })
    const { inputId } = await session.prompt('fan out')
    const sleeping = async () =>
      (await session.log.read({ types: ['harness.tool.suspended'] })).filter((e) => (e.record as { kind: string }).kind === 'sleep').length
    await until(async () => (await sleeping()) === 50, '50 children asleep')
    await session.abort(inputId, 'stop the tree')
    const results = await session.log.read({ types: ['harness.tool.result'] })
    const cancelled = results.filter((e) => {
      const r = e.record as { toolCallId: string; error?: { code?: string } }
      return r.toolCallId.includes('.leaf-') && r.error?.code === 'cancelled'
    })
    expect(cancelled).toHaveLength(50)
    expect((await session.settled(inputId)).outcome).toBe('aborted')
    expect(provider.starts).toHaveLength(0)
  })
})
