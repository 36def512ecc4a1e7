// Child agents from a durable tool (ctx.agents, R23, R24, docs/fan-out.md) in one process: a turn of
// a child session per name, run once, in the parent's tree (its limits across sessions), cancelled
// down the tree; and the model-called agentTool under the same limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { agents, boss, crewTen, crewTurn, helper, nester, researcher } from '../fixtures/fanout.js'
import { rollUpUsage, SessionLog } from '../../src/log/index.js'
import { rigClient } from '../rig.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'
import { childSessionId } from '../../src/fanout/index.js'
import { runBin } from '../helpers/cli.js'

describe('child agents from a durable tool', () => {
  const hosts = useInProcessHosts()
  let provider: TestProvider
  beforeAll(async () => {
    provider = await startProvider(20)
    process.env.PROVIDER_URL = provider.url
  })
  afterAll(async () => provider?.close())
  const all = [agents, researcher, nester]

  it('R23 a tool starts 10 child tool calls and 8 child agents: results in order, each side effect once', async () => {
    provider.reset()
    const { host, prefix, url } = hosts.start(all, 'agents-basic', { concurrency: 4 })
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const session = host.open(agents, { sessionId: 'crew-1' })
    const result = await session.runTool({ name: 'crew', input: { tools: 10, agents: 8 }, toolCallId: 'root' })
    expect(result).toEqual([...Array.from({ length: 10 }, (_, n) => n * 2), ...Array.from({ length: 8 }, (_, j) => `agent ${1000 + j}`)])
    expect(new Set(provider.starts.map((s) => s.tenant)).size).toBe(18)
    expect(provider.starts).toHaveLength(18)
    // the child's session: derived from the call and the name; its turn got the context
    const input = await new SessionLog(redis, prefix, childSessionId('crew-1', 'root.agent-3')).inputs.getInput('agent-call')
    expect(input?.text).toBe('1003')
    expect(JSON.parse(input?.context ?? 'null')).toEqual({ j: 3 })
    expect(input?.parent?.tree).toEqual({ sessionId: 'crew-1', root: 'root', depth: 1 })
    // run again: the same children, nothing runs twice (R23)
    expect(await session.runTool({ name: 'crew', input: { tools: 10, agents: 8 }, toolCallId: 'root' })).toEqual(result)
    expect(provider.starts).toHaveLength(18)
  })

  it("the root turn's principal and metadata go to every child agent", async () => {
    provider.reset()
    const { host, prefix, url } = hosts.start([crewTurn, researcher], 'agents-tags', { concurrency: 4 })
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const session = host.open(crewTurn, { sessionId: 'tags-1' })
    const { inputId } = await session.prompt('go', { principal: 'user-7', metadata: { team: 'red' } })
    expect((await session.settled(inputId)).outcome).toBe('completed')
    const [call] = await session.log.read({ types: ['harness.tool.result'] })
    const parentId = (call!.record as { toolCallId: string }).toolCallId.split('.')[0]!
    for (const j of [0, 1]) {
      const input = await new SessionLog(redis, prefix, childSessionId('tags-1', `${parentId}.agent-${j}`)).inputs.getInput('agent-call')
      expect(input).toMatchObject({ principal: 'user-7', metadata: { team: 'red' }, status: 'settled' })
    }
  })

  it("seen from above: the root follower gets each child agent's progress as CUSTOM events; host.tree, log --tree and host.turns show the tree", async () => {
    provider.reset()
    const { host, prefix, url } = hosts.start(all, 'agents-seen', { concurrency: 4 })
    const session = host.open(agents, { sessionId: 'seen-1' })
    const stop = new AbortController()
    const custom: Array<{ name: string; value: { sessionId: string; event: string; depth: number } }> = []
    const following = (async () => {
      for await (const { event: e } of session.events({ follow: true, signal: stop.signal }))
        if (e.type === 'CUSTOM' && e.name === 'harness.child') custom.push(e as never)
    })().catch(() => {})
    await session.runTool({ name: 'crew', input: { tools: 2, agents: 3 }, toolCallId: 'r' })
    await until(async () => custom.filter((c) => c.value.event === 'settled').length === 3, 'three children settled, seen by the root')
    stop.abort()
    await following
    expect(custom.filter((c) => c.value.event === 'response')).toHaveLength(6)
    expect(new Set(custom.map((c) => c.value.sessionId))).toEqual(new Set([0, 1, 2].map((j) => childSessionId('seen-1', `r.agent-${j}`))))
    // the tree: the root call, its 2 leaves and 3 agents, each agent with its session
    const [root, ...others] = await host.tree('seen-1')
    expect(others).toEqual([])
    expect(root).toMatchObject({ toolCallId: 'r', tool: 'crew', depth: 0, status: 'done' })
    expect(root!.children.map((c) => [c.toolCallId, c.tool, c.status, c.result])).toEqual([
      ['r.agent-0', 'harness.agent:fanout-researcher', 'done', 'ok'],
      ['r.agent-1', 'harness.agent:fanout-researcher', 'done', 'ok'],
      ['r.agent-2', 'harness.agent:fanout-researcher', 'done', 'ok'],
      ['r.leaf-0', 'leaf', 'done', 'ok'],
      ['r.leaf-1', 'leaf', 'done', 'ok'],
    ])
    expect(root!.children[1]!.agent).toMatchObject({
      sessionId: childSessionId('seen-1', 'r.agent-1'),
      harness: 'fanout-researcher',
      outcome: 'completed',
    })
    const printed = await runBin(['log', 'seen-1', '--tree'], {
      REDIS_URL: url,
      DH_PREFIX: prefix,
      HARNESS_MODULE: 'test/fixtures/fanout.ts',
    })
    expect(printed.code).toBe(0)
    expect(printed.stdout).toMatch(
      /^r {2}crew {2}done \(ok\)\n {2}r\.agent-0 {2}harness\.agent:fanout-researcher {2}done \(ok\) {2}→ fanout-researcher seen-1\.agent-\w+ completed/,
    )
    // host.turns: a child agent's turn names its parent and its place in the tree
    const page = await host.turns({ harness: 'fanout-researcher', limit: 10 })
    expect(page.items).toHaveLength(3)
    expect(page.items[0]!.parent).toMatchObject({ sessionId: 'seen-1', tree: { sessionId: 'seen-1', root: 'r', depth: 1 } })
  })

  it("R25 a tree of 10 child agents: the root's tree total is its own spend plus each child's, counted once whatever reruns", async () => {
    provider.reset()
    const { host, prefix, url } = hosts.start([crewTen, researcher], 'agents-spend', { concurrency: 6 })
    const session = host.open(crewTen, { sessionId: 'spend-1' })
    const { inputId } = await session.prompt('go')
    expect((await session.settled(inputId)).outcome).toBe('completed')
    const root = await session.usage()
    const children = await Promise.all(
      Array.from({ length: 10 }, async (_, j) => {
        const [node] = (await host.tree('spend-1'))[0]!.children.filter((c) => c.toolCallId.endsWith(`.agent-${j}`))
        return (await host.open(researcher, { sessionId: node!.agent!.sessionId }).usage()).total
      }),
    )
    expect(children.every((c) => c.calls === 2)).toBe(true)
    const sum = (key: 'calls' | 'promptTokens' | 'completionTokens' | 'totalTokens') =>
      root.total[key] + children.reduce((n, c) => n + c[key], 0)
    expect(root.tree).toMatchObject({ calls: sum('calls'), promptTokens: sum('promptTokens'), completionTokens: sum('completionTokens') })
    expect(root.tree!.calls).toBe(22)
    // the roll-up again (an agent call run again before it landed) adds nothing: it is marked per child session
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const child = new SessionLog(redis, prefix, (await host.tree('spend-1'))[0]!.children[0]!.agent!.sessionId)
    await rollUpUsage(child.stream, new SessionLog(redis, prefix, 'spend-1').stream)
    expect((await session.usage()).tree).toEqual(root.tree)
  })

  it("R24 maxDepth holds across child agents' sessions: the third level's start is refused with tree_limit", async () => {
    const { host } = hosts.start(all, 'agents-depth')
    const session = host.open(agents, { sessionId: 'nest-1' })
    const result = await session.runTool({ name: 'nest', input: { level: 0 }, toolCallId: 'n' })
    expect(result).toMatch(/^refused at 3: .*maxDepth \(2\)/)
  })

  it('R24 the model-called agentTool obeys the tree limits: 5 asked in one turn under maxCalls 3, two refused with tree_limit', async () => {
    const { host } = hosts.start([boss, helper], 'agents-tool')
    const session = host.open(boss, { sessionId: 'boss-1' })
    const { inputId } = await session.prompt('get help')
    const settled = await session.settled(inputId)
    expect(settled).toMatchObject({ outcome: 'completed', text: 'saw 5 results' })
    const results = await session.log.read({ types: ['harness.tool.result'] })
    const codes = results.map((e) => (e.record as { error?: { code?: string } }).error?.code ?? 'ok').sort()
    expect(codes).toEqual(['ok', 'ok', 'ok', 'tree_limit', 'tree_limit'])
  })

  it('cancel-siblings: a failing child agent aborts the turns of the others, none of their side effects runs after', async () => {
    provider.reset()
    const { host } = hosts.start(all, 'agents-cancel', { concurrency: 6 })
    const session = host.open(agents, { sessionId: 'cancel-1' })
    const result = await session.runTool({
      name: 'crew',
      input: { tools: 0, agents: 4, onFailure: 'cancel-siblings', failAgent: 3, sleep: true },
      toolCallId: 'cs',
    })
    expect(result).toMatchObject({ failed: 'tool_error' })
    for (const j of [0, 1, 2]) {
      const child = host.open(researcher, { sessionId: childSessionId('cancel-1', `cs.agent-${j}`) })
      expect((await child.settled('agent-call')).outcome).toBe('aborted')
    }
    expect(provider.starts).toHaveLength(0)
  })

  it('a group with maxConcurrent 2 runs at most 2 of its child agents at once, in start order', async () => {
    provider.reset()
    const { host } = hosts.start(all, 'agents-width', { concurrency: 8 })
    const session = host.open(agents, { sessionId: 'width-1' })
    const result = await session.runTool({ name: 'crew', input: { tools: 0, agents: 6, maxConcurrent: 2 }, toolCallId: 'w' })
    expect(result).toEqual(Array.from({ length: 6 }, (_, j) => `agent ${1000 + j}`))
    expect(provider.maxInFlight).toBeLessThanOrEqual(2)
    expect(
      provider.starts
        .map((s) => s.n)
        .slice(0, 2)
        .sort(),
    ).toEqual([1000, 1001])
  })

  it('abort of the root call while its child agents sleep: every child turn ends aborted, nothing of theirs runs after', async () => {
    provider.reset()
    const { host } = hosts.start(all, 'agents-abort', { concurrency: 8 })
    const session = host.open(agents, { sessionId: 'abort-1' })
    const running = session.runTool({ name: 'crew', input: { tools: 0, agents: 5, sleep: true }, toolCallId: 'a' }).catch((e: unknown) => e)
    const children = Array.from({ length: 5 }, (_, j) => host.open(researcher, { sessionId: childSessionId('abort-1', `a.agent-${j}`) }))
    const asleep = async () => {
      let n = 0
      for (const c of children) n += (await c.log.read({ types: ['harness.tool.suspended'] })).length
      return n
    }
    await until(async () => (await asleep()) === 5, '5 child agents asleep')
    expect(await session.cancelCall('a', 'stop the crew')).toBe(true)
    for (const c of children) expect((await c.settled('agent-call')).outcome).toBe('aborted')
    expect(provider.starts).toHaveLength(0)
    await running
  })
})
