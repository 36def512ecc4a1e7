// host.fork (issue 53 item 5; docs/compaction.md, "Fork"): a new session whose conversation is the
// source's up to `before` / `through`, copied as settled: no side effect of the copied span runs
// again (counted at a provider of the test's own), the fork's calls get new idempotency keys, the
// source is untouched, and the fork's origin is in its log and timeline. R21: the fork's views are
// the ones a fresh reader builds from its log.
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool, evictOldest } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { Timeline } from '../../src/timeline/items.js'
import { ops } from '../fixtures/ops.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'

describe('host.fork', () => {
  const hosts = useInProcessHosts()

  /** A harness whose every prompt "charge:<n>" calls charge once; the provider counts each charge with its idempotency key. */
  function charging(label: string) {
    const charges: string[] = []
    const seen: Array<{ sessionId: string; messages: ModelMessage[] }> = []
    let call = 0
    const charge = durableTool(
      toolDefinition({ name: 'charge', description: 'Charge', inputSchema: z.object({ amount: z.number() }) }),
      async ({ amount }, { step }) =>
        step.do('charge', ({ idempotencyKey }) => {
          charges.push(idempotencyKey) // the provider of the test's own
          return { charged: amount }
        }),
    )
    const harness = defineHarness({
      name: label,
      adapter: scriptedModel(
        Array.from({ length: 200 }, () => ({ messages }: { messages: ModelMessage[] }) => {
          seen.push({ sessionId: '', messages })
          const last = messages.at(-1)!
          if (last.role === 'tool') return { text: `charged: ${String(last.content)}` }
          const amount = /^charge:(\d+)$/.exec(String(last.content))?.[1]
          return amount ? { toolCalls: [{ name: 'charge', input: { amount: Number(amount) }, id: `c-${++call}` }] } : { text: 'ok' }
        }),
      ),
      tools: [charge],
      compaction: { maxTokens: 100_000, strategy: evictOldest({ keepRecentTokens: 1 }) },
    })
    return { harness, charges, seen }
  }

  it("R21: the fork's first model call sees the source up to `before`; no side effect of the copied span runs again, the fork's calls get new idempotency keys, the source is untouched and the origin shows in the fork's log and timeline", async () => {
    const { harness, charges, seen } = charging('forking')
    const { host } = hosts.start(harness, 'fork')
    const source = host.open(harness, { sessionId: 'src' })
    for (const [i, amount] of [10, 20, 30].entries()) {
      const { inputId } = await source.prompt(`charge:${amount}`, { inputId: `q${i}` })
      expect(await source.settled(inputId)).toMatchObject({ outcome: 'completed' })
    }
    expect(charges).toHaveLength(3)
    // the view q2's first call got: q0 and q1 as they were, then q2's input
    const q2First = seen.find((s) => s.messages.at(-1)!.content === 'charge:30')!.messages
    const sourceLog = await source.log.read()

    const forkId = await host.fork('src', { before: 'q2', sessionId: 'src-fork', principal: 'ops@acme' })
    expect(forkId).toBe('src-fork')
    // the source is untouched
    expect(await source.log.read()).toEqual(sourceLog)
    const fork = host.open(harness, { sessionId: forkId })
    const calls = seen.length
    const { inputId } = await fork.prompt('charge:99')
    expect(await fork.settled(inputId)).toEqual({ outcome: 'completed', text: expect.stringMatching(/^charged: /) })
    const forkFirst = seen[calls]!.messages
    expect(forkFirst.slice(0, -1)).toEqual(q2First.slice(0, -1))
    expect(forkFirst.at(-1)).toEqual({ role: 'user', content: 'charge:99' })
    // only the fork's own call charged, with a key no source call had
    expect(charges).toHaveLength(4)
    expect(new Set(charges).size).toBe(4)
    expect(charges.at(-1)).toContain('src-fork')
    // the copied turns are settled in the fork: nothing of them is open, and the fork's log starts with them
    const forkLog = await fork.log.read()
    expect(records(forkLog, 'harness.input').map((r) => r.inputId)).toEqual(['q0', 'q1', inputId])
    expect(records(forkLog, 'harness.fork')).toEqual([
      expect.objectContaining({ from: 'src', before: 'q2', turns: 2, principal: 'ops@acme' }),
    ])
    expect((await host.turns({ status: 'open' })).items.filter((t) => t.sessionId === 'src-fork')).toEqual([])
    const timeline = new Timeline()
    const lines: string[] = []
    for await (const event of fork.events({ follow: false })) lines.push(...timeline.push(event).map((item) => item.text))
    expect(lines).toContain('forked from src before q2 by ops@acme: 2 turns copied')

    // through: the turn named is copied too; the two forks and the source go on independently
    const through = await host.fork('src', { through: 'q2' })
    expect(through).toMatch(/^fork-/)
    const other = host.open(harness, { sessionId: through })
    await other.settled((await other.prompt('hello')).inputId)
    expect(
      seen
        .at(-1)!
        .messages.filter((m) => m.role === 'user')
        .map((m) => m.content),
    ).toEqual(['charge:10', 'charge:20', 'charge:30', 'hello'])
    await source.settled((await source.prompt('charge:5')).inputId)
    expect(charges).toHaveLength(5)
    expect(records(await source.log.read(), 'harness.input')).toHaveLength(4)
  })

  it('a fork keeps the compactions of the copied turns: its first call sees their summary, as the source did', async () => {
    const { harness, seen } = charging('forkCompacted')
    const { host } = hosts.start(harness, 'fork-compacted')
    const source = host.open(harness, { sessionId: 'csrc' })
    for (const [i, amount] of [1, 2, 3].entries())
      await source.settled((await source.prompt(`charge:${amount}`, { inputId: `k${i}` })).inputId)
    await source.compact()
    await source.settled((await source.prompt('charge:4', { inputId: 'k3' })).inputId)
    const k3First = seen.find((s) => s.messages.at(-1)!.content === 'charge:4')!.messages
    const forkId = await host.fork('csrc', { before: 'k3' })
    const fork = host.open(harness, { sessionId: forkId })
    const calls = seen.length
    await fork.settled((await fork.prompt('charge:7')).inputId)
    expect(seen[calls]!.messages.slice(0, -1)).toEqual(k3First.slice(0, -1))
    expect(k3First[0]!.content).toMatch(/earlier turns of this conversation are not shown/)
  })

  it('refuses a fork through a turn with a parked call, an unknown or bad input id, both before and through, and a new session that exists; nothing is written', async () => {
    const { host } = hosts.start(ops, 'fork-refused')
    const session = host.open(ops, { sessionId: 'parked' })
    await session.settled((await session.prompt('hello', { inputId: 'p0' })).inputId)
    await session.prompt('deploy:billing', { inputId: 'p1' })
    await until(async () => (await session.questions()).length === 1, 'the deploy call to park on its question')
    await expect(host.fork('parked', { through: 'p1', sessionId: 'f1' })).rejects.toMatchObject({
      code: 'fork_refused',
      message: expect.stringContaining('its turn p1 is not settled'),
    })
    await expect(host.fork('parked', { sessionId: 'f1' })).rejects.toMatchObject({ code: 'fork_refused' })
    await expect(host.fork('parked', { before: 'nope', sessionId: 'f1' })).rejects.toMatchObject({ code: 'unknown_input' })
    await expect(host.fork('parked', { before: 'a b', sessionId: 'f1' })).rejects.toMatchObject({ code: 'invalid_id' })
    await expect(host.fork('parked', { before: 'p1', through: 'p0', sessionId: 'f1' })).rejects.toMatchObject({
      code: 'fork_refused',
      message: expect.stringContaining('not both'),
    })
    await expect(host.fork('nobody', { sessionId: 'f1' })).rejects.toMatchObject({ code: 'fork_refused' })
    expect(await host.open(ops, { sessionId: 'f1' }).log.read()).toEqual([])
    // before the parked turn: allowed
    const forkId = await host.fork('parked', { before: 'p1', sessionId: 'f1' })
    await expect(host.fork('parked', { before: 'p1', sessionId: forkId })).rejects.toMatchObject({
      code: 'fork_refused',
      message: expect.stringContaining('exists already'),
    })
    await session.abort('p1')
  })
})
