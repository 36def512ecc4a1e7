// Budgets (docs/spend.md, "Budgets", R25): a model call reserves its estimate in each budget of its
// turn before it starts, atomically across every worker, and settles it with what the provider billed;
// over a ceiling the turn pauses (resumable once the budget is raised) or fails with budget_exceeded.
// A try cut after its request went out (a SIGKILL) is counted once, as an estimate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { defineHarness, type HarnessHost } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { answerTicks as answer, budgeted, BUDGET_USAGE, CALL_USD, CALLS_A_TURN } from '../fixtures/budgets.js'
import { crew, leaf, researcher } from '../fixtures/fanout.js'
import { startProvider, type TestProvider } from '../helpers/provider.js'
import { childSessionId } from '../../src/fanout/index.js'
import { SessionLog } from '../../src/log/index.js'
import { rigClient } from '../rig.js'
import { useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { startModelServer, type ModelServer } from '../helpers/openaiServer.js'

const MODULE = 'test/fixtures/budgets.ts'

/** Settled or paused: where each turn stopped. */
async function stopsOf(host: HarnessHost, turns: Array<{ sessionId: string; inputId: string }>) {
  const stops = { completed: 0, paused: [] as Array<{ sessionId: string; inputId: string }>, other: 0 }
  for (const turn of turns) {
    const session = host.open(budgeted, { sessionId: turn.sessionId })
    const entries = await session.log.read()
    const settled = records(entries, 'harness.input.settled')[0]
    const paused = records(entries, 'harness.turn.paused').length > records(entries, 'harness.turn.resumed').length
    if (settled?.outcome === 'completed') stops.completed++
    else if (settled) stops.other++
    else if (paused) stops.paused.push(turn)
  }
  return stops
}

describe('budgets across worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'budgets', harnesses: [budgeted], module: MODULE, workers: 0 })
  let server: ModelServer
  beforeAll(async () => {
    server = await startModelServer(answer)
    for (let i = 0; i < 3; i++) ctx.workers.push(await ctx.spawn({ env: { OPENAI_BASE_URL: server.baseURL, BUDGET_USD: '1' } }))
  })
  afterAll(() => server?.close())

  it('R25 a $1.00 principal budget across 3 racing workers: no call starts past it, the paused turns resume and complete once it is raised', async () => {
    const turns: Array<{ sessionId: string; inputId: string }> = []
    // 30 turns of 5 calls at $0.02: $3.00 asked of a $1.00 budget, all at once
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const sessionId = `budget-${i}`
        const { inputId } = await ctx.host.open(budgeted, { sessionId }).prompt('work', { principal: 'alice' })
        turns.push({ sessionId, inputId })
      }),
    )
    await until(
      async () => {
        const stops = await stopsOf(ctx.host, turns)
        return stops.completed + stops.paused.length + stops.other === turns.length
      },
      'every turn completed or paused at the budget',
      60_000,
    )
    const stops = await stopsOf(ctx.host, turns)
    expect(stops.other).toBe(0)
    expect(stops.paused.length).toBeGreaterThan(0)
    // what the provider billed: each request answered with BUDGET_USAGE at $0.02
    const billed = server.requests.length * CALL_USD
    const overshoot = billed - 1
    // the reservations (prompt estimate + 100 output tokens) cover a call's cost: spend never passes the budget
    expect(overshoot).toBeLessThanOrEqual(1e-9)
    // and the budget is used: what is left is less than one call
    expect(overshoot).toBeGreaterThan(-CALL_USD - 1e-9)
    // the totals count every request billed, to the cent
    const usage = await ctx.host.usage({ principal: 'alice' })
    expect(usage.total.calls).toBe(server.requests.length)
    expect(usage.total.cost).toBeCloseTo(billed, 9)
    expect(usage.total.totalTokens).toBe(server.requests.length * BUDGET_USAGE.total_tokens)
    // the principal's budget hash: every reservation settled, what it spent is what was billed
    const [key] = await ctx.redis.keys(`${ctx.prefix}:*:budget:budgeted:*`)
    const budget = await ctx.redis.hgetall(key!)
    expect(budget).toMatchObject({ 'p/held/cost': '0', 'p/held/calls': '0', 'p/spent/calls': String(server.requests.length) })
    expect(Number(budget['p/spent/cost'])).toBe(Math.round(billed * 1e9))
    expect(Object.keys(budget).filter((f) => f.startsWith('p/r/'))).toEqual([])
    // each pause says which budget, and how much
    const { sessionId, inputId } = stops.paused[0]!
    const exceeded = records(await ctx.host.open(budgeted, { sessionId }).log.read(), 'harness.budget.exceeded')
    expect(exceeded[0]).toMatchObject({ inputId, scope: 'principal', metric: 'cost', max: 1, action: 'pause', principal: 'alice' })
    expect(exceeded[0]!.spent + exceeded[0]!.held + exceeded[0]!.estimate).toBeGreaterThan(1)
    // a tool read what was left of the budget, less as the calls went on
    const lefts = records(await ctx.host.open(budgeted, { sessionId: turns[0]!.sessionId }).log.read(), 'harness.tool.result').map(
      (r) => (r.result as { left: Array<{ scope: string; cost: number }> }).left[0]!,
    )
    expect(lefts[0]!.scope).toBe('principal')
    expect(lefts[0]!.cost).toBeLessThan(1)

    // the budget is raised (a deploy with a higher ceiling), and the paused turns are resumed
    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    for (let i = 0; i < 3; i++) ctx.workers.push(await ctx.spawn({ env: { OPENAI_BASE_URL: server.baseURL, BUDGET_USD: '10' } }))
    for (const turn of stops.paused) expect(await ctx.host.open(budgeted, { sessionId: turn.sessionId }).resume(turn.inputId)).toBe(true)
    await until(async () => (await stopsOf(ctx.host, turns)).completed === turns.length, 'every turn completed after the resume', 60_000)
    // every turn made its 5 calls, once each: $3.00 billed and counted
    expect(server.requests.length).toBe(turns.length * CALLS_A_TURN)
    const after = await ctx.host.usage({ principal: 'alice' })
    expect(after.total.calls).toBe(turns.length * CALLS_A_TURN)
    expect(after.total.cost).toBeCloseTo(turns.length * CALLS_A_TURN * CALL_USD, 9)
  }, 180_000)
})

describe('budgets in process', () => {
  const hosts = useInProcessHosts()
  const ticks = (n: number) => Array.from({ length: n }, () => ({ toolCalls: [{ name: 'tick', input: { n: 0 } }] }))

  it('R25 a session budget with onExceeded fail: the call past maxModelCalls never starts, the turn fails with budget_exceeded', async () => {
    const harness = defineHarness({
      name: 'capped',
      adapter: scriptedModel([...ticks(5), { text: 'done' }]),
      tools: [budgeted.tools[0]!],
      budgets: { session: { maxModelCalls: 3, onExceeded: 'fail' } },
    })
    const { host } = hosts.start(harness, 'budget-fail')
    const session = host.open(harness, { sessionId: 'capped' })
    const { inputId } = await session.prompt('go')
    const settled = await session.settled(inputId)
    expect(settled).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded' } })
    expect(settled.error?.message).toMatch(/session budget's calls ceiling of 3 calls would be passed/)
    const entries = await session.log.read()
    expect(records(entries, 'harness.model.response')).toHaveLength(3)
    expect(records(entries, 'harness.budget.exceeded')).toMatchObject([
      { scope: 'session', metric: 'calls', max: 3, spent: 3, held: 0, action: 'fail' },
    ])
    expect((await session.usage()).total.calls).toBe(3)
  })

  it('R25 a paused session budget: session.resume tries again and pauses again while the budget stays spent', async () => {
    const harness = defineHarness({
      name: 'paused',
      adapter: scriptedModel([...ticks(3), { text: 'done' }]),
      tools: [budgeted.tools[0]!],
      budgets: { session: { maxModelCalls: 2 } },
    })
    const { host } = hosts.start(harness, 'budget-pause')
    const session = host.open(harness, { sessionId: 'paused' })
    const { inputId } = await session.prompt('go')
    const pausedCount = async () => records(await session.log.read(), 'harness.turn.paused').length
    await until(async () => (await pausedCount()) === 1, 'the turn paused at the budget')
    expect(records(await session.log.read(), 'harness.turn.paused')[0]!.error.code).toBe('budget_exceeded')
    expect(await session.resume(inputId)).toBe(true)
    await until(async () => (await pausedCount()) === 2, 'the turn paused again')
    expect(records(await session.log.read(), 'harness.model.response')).toHaveLength(2)
  })

  it('R25 defineHarness refuses a budget it cannot keep: a clear ConfigError naming the field', () => {
    const make = (budgets: unknown) => () =>
      defineHarness({ name: 'bad', adapter: scriptedModel([]), tools: [], budgets: budgets as never })
    expect(make({ session: { maxCost: -1 } })).toThrow(ConfigError)
    expect(make({ session: { maxCost: -1 } })).toThrow(/budgets\.session\.maxCost must be a number ≥ 0 \(USD\), got -1/)
    expect(make({ session: {} })).toThrow(/budgets\.session sets no ceiling/)
    expect(make({ principal: { maxCost: 1 } })).toThrow(/budgets\.principal\.per must be a period/)
    expect(make({ principal: { maxCost: 1, per: 'soon' } })).toThrow(/budgets\.principal\.per/)
    expect(make({ tree: { maxTokens: 5, onExceeded: 'stop' } })).toThrow(/budgets\.tree\.onExceeded must be 'pause' or 'fail'/)
    expect(make({ team: { maxCost: 1 } })).toThrow(/budgets\.team is not a budget scope/)
  })
})

describe('a tree budget', () => {
  const hosts = useInProcessHosts()
  let provider: TestProvider
  beforeAll(async () => {
    provider = await startProvider(5)
    process.env.PROVIDER_URL = provider.url
  })
  afterAll(async () => provider?.close())

  it("R25 a tree budget counts every child agent's model calls at the root: none starts past maxModelCalls, the refused ones fail", async () => {
    // the root's first call starts 10 researcher agents (2 model calls each), then it answers: 22 calls asked, 12 allowed
    const root = defineHarness({
      name: 'tree-budgeted',
      adapter: scriptedModel([{ toolCalls: [{ name: 'crew', input: { tools: 0, agents: 10 } }] }, { text: 'done' }]),
      tools: [leaf, crew],
      subagents: { limits: { maxConcurrent: 10 } },
      budgets: { tree: { maxModelCalls: 12, onExceeded: 'fail' } },
    })
    const { host, prefix, url } = hosts.start([root, researcher], 'budget-tree', { concurrency: 4 })
    const session = host.open(root, { sessionId: 'tree-1' })
    const { inputId } = await session.prompt('go')
    const settled = await session.settled(inputId)
    // the children's calls used the tree's budget up: the root's own last call is refused too
    expect(settled).toMatchObject({ outcome: 'failed', error: { code: 'budget_exceeded' } })
    const results = (await session.log.read({ types: ['harness.tool.result'] })).map(
      (e) => e.record as { toolCallId: string; result: string[] },
    )
    // the crew call's (its children's results are in the log too, under `<crew>.<name>`)
    const record = results.find((r) => !r.toolCallId.includes('.'))!
    const refused = record.result.filter((r) => r === 'failed: budget_exceeded')
    expect(refused.length).toBeGreaterThan(0)
    // every model call of the tree, at any session, counted once in the root's tree figures: 12 at most
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    let calls = 1
    for (let j = 0; j < 10; j++) {
      const child = new SessionLog(redis, prefix, childSessionId('tree-1', `${record.toolCallId}.agent-${j}`))
      calls += (await child.stream.read()).filter((e) => e.record.type === 'harness.model.response').length
    }
    expect(calls).toBe(12)
    const budget = await redis.hgetall(new SessionLog(redis, prefix, 'tree-1').stream.keys.budget)
    expect(budget).toMatchObject({ 't/spent/calls': '12', 't/held/calls': '0', 't/max/calls': '12' })
  })
})
