// Budgets across a Redis restart (R25, docs/spend.md, "Budgets"): a session budget's counters live in
// Redis, so a turn paused at its ceiling stays paused after Redis is SIGKILLed and restarted from its
// AOF (appendfsync always). The spent calls come back, nothing is left held, and a resume after the
// restart is refused again: no model call starts past the ceiling.
import { describe, expect, it } from 'vitest'
import { defineHarness } from '../../src/index.js'
import { SessionLog } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { tick } from '../fixtures/budgets.js'
import { crashRedis, useInProcessHosts, usePrivateRedis } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { rigClient } from '../rig.js'

describe('budgets across a Redis restart', () => {
  const hosts = useInProcessHosts()
  const privateRedis = usePrivateRedis()

  it('R25 a session budget paused at maxModelCalls survives a Redis SIGKILL and AOF restart: the counters come back, a resume is refused again without a 4th model call', async () => {
    const server = privateRedis()
    // five `tick` calls then a text: 6 model calls asked of a budget of 3
    const ticks = Array.from({ length: 5 }, () => ({ toolCalls: [{ name: 'tick', input: { n: 0 } }] }))
    const harness = defineHarness({
      name: 'restart-capped',
      adapter: scriptedModel([...ticks, { text: 'done' }]),
      tools: [tick],
      budgets: { session: { maxModelCalls: 3, onExceeded: 'pause' } },
    })
    const { host, prefix } = hosts.start(harness, 'budget-restart', { redis: server.url })
    const redis = rigClient(server.url, { maxRetriesPerRequest: null })
    // refused connections while Redis is down are expected: the client reconnects
    redis.on('error', () => {})
    hosts.defer(() => redis.disconnect())
    const budgetKey = new SessionLog(redis, prefix, 'restart-capped').stream.keys.budget
    const session = host.open(harness, { sessionId: 'restart-capped' })
    const read = async () => session.log.read()
    const count = async (type: string) => records(await read(), type).length

    const { inputId } = await session.prompt('go')
    await until(async () => (await count('harness.turn.paused')) === 1, 'the turn paused at the budget', 30_000)
    const before = await read()
    expect(records(before, 'harness.turn.paused')[0]!.error.code).toBe('budget_exceeded')
    expect(records(before, 'harness.model.response')).toHaveLength(3)
    expect(records(before, 'harness.budget.exceeded')).toMatchObject([
      { inputId, scope: 'session', metric: 'calls', max: 3, spent: 3, held: 0, action: 'pause' },
    ])
    await until(
      async () => {
        const budget = await redis.hgetall(budgetKey)
        return budget['s/spent/calls'] === '3' && budget['s/held/calls'] === '0'
      },
      'the budget settled: 3 calls spent, none held',
      30_000,
    )

    // Redis crashes and comes back from its AOF
    await crashRedis(server)
    await until(
      async () =>
        redis
          .ping()
          .then((p) => p === 'PONG')
          .catch(() => false),
      'Redis back',
      30_000,
    )
    await until(
      async () =>
        read()
          .then(() => true)
          .catch(() => false),
      'the host reads the log again',
      30_000,
    )

    // the counters came back: 3 calls spent, nothing held, no reservation left over
    const budget = await redis.hgetall(budgetKey)
    expect(budget).toMatchObject({ 's/spent/calls': '3', 's/held/calls': '0' })
    expect(Object.keys(budget).filter((f) => f.startsWith('s/r/'))).toEqual([])
    expect(await count('harness.turn.paused')).toBe(1)
    expect(await count('harness.model.response')).toBe(3)

    // a resume after the restart tries again, and the restarted Redis still refuses the 4th call
    expect(await session.resume(inputId)).toBe(true)
    await until(async () => (await count('harness.turn.paused')) === 2, 'the turn paused again after the restart', 60_000)
    const after = await read()
    expect(records(after, 'harness.turn.paused').map((r) => r.error.code)).toEqual(['budget_exceeded', 'budget_exceeded'])
    expect(records(after, 'harness.model.response')).toHaveLength(3)
    expect(records(after, 'harness.budget.exceeded')).toMatchObject([
      { scope: 'session', metric: 'calls', max: 3, spent: 3, held: 0, action: 'pause' },
      { scope: 'session', metric: 'calls', max: 3, spent: 3, held: 0, action: 'pause' },
    ])
    expect(records(after, 'harness.input.settled')).toEqual([])
    expect(await redis.hgetall(budgetKey)).toMatchObject({ 's/spent/calls': '3', 's/held/calls': '0' })
    expect((await session.usage()).total.calls).toBe(3)
  }, 180_000)
})
