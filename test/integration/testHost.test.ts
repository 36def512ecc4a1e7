// createTestHost (docs/testing.md, issue 58): a real host and workers on their own Redis, with a clock a
// test moves. A 30-day sleep, an approval, an event and a retry with a one-hour backoff happen at once
// with `advance`, through the product's own waits; the same run on the real clock with short durations
// agrees step for step; waits come due in time order.
import { describe, expect, it } from 'vitest'
import { createTestHost, type TestHost } from '../../src/testing/index.js'
import { billingKit, provider, reporter } from '../fixtures/billingKit.js'
import { getRedisUrl } from '../rig.js'

const DAY = 86_400_000
const HOUR = 3_600_000

async function renewal(
  env: TestHost,
  sessionId: string,
  durations: { waitMs: number; retryMs: number; timeoutMs: number },
  move: (ms: number) => Promise<void>,
) {
  provider.failuresLeft = 2
  const session = env.open(billingKit, sessionId)
  const result = session.runTool({ name: 'renew', input: { orderId: sessionId, ...durations }, toolCallId: 'renew-1' })
  await env.runUntilIdle()
  await move(durations.waitMs) // the month's sleep ends; the call asks
  const [question] = await session.questions()
  await env.answer({ sessionId, questionId: question!.questionId }, { approved: true })
  await env.runUntilIdle()
  await env.sendEvent({ event: 'payment.settled', key: sessionId, payload: { amount: 42 } })
  await env.runUntilIdle()
  // the provider fails twice: two backoffs of retryMs
  await move(durations.retryMs)
  await move(durations.retryMs)
  return { result: await result, calls: await env.calls(sessionId), steps: await env.steps(sessionId, 'renew-1') }
}

describe('createTestHost', () => {
  it('a manual clock: a 30-day sleep, an approval, an event and two one-hour retry backoffs happen at once, each step once', async () => {
    const env = await createTestHost({ harnesses: [billingKit], redis: await getRedisUrl() })
    try {
      const started = env.now()
      const run = await renewal(env, 'order-m', { waitMs: 30 * DAY, retryMs: HOUR, timeoutMs: 7 * DAY }, (ms) => env.advance(ms))
      expect(run.result).toEqual({ charge: 'ch_order-m', approved: true, amount: 42, report: true })
      expect(env.now() - started).toBeGreaterThanOrEqual(30 * DAY + 2 * HOUR)
      expect(run.calls).toEqual([expect.objectContaining({ toolCallId: 'renew-1', status: 'done', attempts: ['fresh'] })])
      const timeline = await env.timeline('order-m')
      expect(timeline.find((line) => line.includes('charge'))).toBeDefined()
      expect(timeline.length).toBeGreaterThan(5)
      expect(run.steps.map((s) => [s.name, s.runs])).toEqual([
        ['charge', 1],
        ['grace', 0],
        ['approve', 0],
        ['settled', 0],
        ['report', 3],
      ])
    } finally {
      await env.close()
    }
  }, 60_000)

  it('the same on the real clock with short durations agrees on every step and record', async () => {
    const manual = await createTestHost({ harnesses: [billingKit], redis: await getRedisUrl() })
    let manualRun
    try {
      manualRun = await renewal(manual, 'order-a', { waitMs: 30 * DAY, retryMs: HOUR, timeoutMs: 7 * DAY }, (ms) => manual.advance(ms))
    } finally {
      await manual.close()
    }
    const real = await createTestHost({ harnesses: [billingKit], redis: await getRedisUrl(), clock: 'real' })
    try {
      const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)).then(() => real.runUntilIdle())
      const realRun = await renewal(real, 'order-a', { waitMs: 300, retryMs: 2_500, timeoutMs: 60_000 }, sleep)
      expect(realRun.result).toEqual(manualRun.result)
      const shape = (run: typeof realRun) => ({
        calls: run.calls,
        steps: run.steps.map(({ name, runs, value }) => ({ name, runs, value: name === 'grace' ? 'a wake time' : value })),
      })
      expect(shape(realRun)).toEqual(shape(manualRun))
    } finally {
      await real.close()
    }
  }, 60_000)

  it('advance wakes waits in time order: five interleaved sleeps', async () => {
    const env = await createTestHost({ harnesses: [billingKit], redis: await getRedisUrl() })
    try {
      const session = env.open(billingKit, 'naps')
      const lengths = [5 * HOUR, 1 * HOUR, 4 * HOUR, 2 * HOUR, 3 * HOUR]
      const start = env.now()
      const woke = lengths.map((ms, i) => session.runTool({ name: 'nap', input: { ms }, toolCallId: `nap-${i}` }))
      await env.runUntilIdle()
      await env.advance('1d')
      const at = (await Promise.all(woke)).map((r) => (r as { at: number }).at - start)
      // each woke at its own time, not all at the end of the day: in the order of their lengths
      lengths.forEach((ms, i) => expect(at[i]).toBeGreaterThanOrEqual(ms))
      lengths.forEach((ms, i) => expect(at[i]).toBeLessThan(ms + HOUR))
    } finally {
      await env.close()
    }
  }, 60_000)

  it('advance wakes waits in time order: sleeps interleaved with the daily ticks of a schedule', async () => {
    const env = await createTestHost({ harnesses: [billingKit, reporter], redis: await getRedisUrl() })
    try {
      const start = env.now()
      await env.host.schedule({ id: 'daily', harness: reporter, every: '1d', prompt: 'Send the report' })
      const session = env.open(billingKit, 'naps-and-ticks')
      const lengths = [2.5 * DAY, 0.5 * DAY, 1.5 * DAY, 3.5 * DAY, 4.5 * DAY]
      const woke = lengths.map((ms, i) => session.runTool({ name: 'nap', input: { ms }, toolCallId: `nap-${i}` }))
      await env.runUntilIdle()
      await env.advance('5d')
      const naps = (await Promise.all(woke)).map((r, i) => ({ what: `nap ${lengths[i]! / DAY}d`, at: (r as { at: number }).at - start }))
      const ticks = (await env.open(reporter, 'schedule-daily').log.read({ types: ['harness.input'] })).map(({ record }) => ({
        what: 'tick',
        at: ('at' in record ? Number(record.at) : 0) - start,
      }))
      // one tick a day (the first at once), each turn settled
      expect(ticks.length).toBeGreaterThanOrEqual(5)
      const events = [...naps, ...ticks].sort((a, b) => a.at - b.at).map((e) => e.what)
      expect(events.slice(0, 9)).toEqual(['tick', 'nap 0.5d', 'tick', 'nap 1.5d', 'tick', 'nap 2.5d', 'tick', 'nap 3.5d', 'tick'])
      const turns = await env.host.turns({ harness: 'reporter' })
      expect(turns.items.every((t) => t.status === 'completed')).toBe(true)
    } finally {
      await env.close()
    }
  }, 60_000)

  it('env.crash(worker) kills one of two workers between two steps: its calls run again elsewhere, every side effect once', async () => {
    const env = await createTestHost({ harnesses: [billingKit], redis: await getRedisUrl(), workers: 2, concurrency: 4 })
    try {
      provider.done.clear()
      const session = env.open(billingKit, 'two-workers')
      const calls = Array.from({ length: 8 }, (_, i) =>
        session.runTool({ name: 'twoSteps', input: { id: `c${i}`, pauseMs: 1_500 }, toolCallId: `two-${i}` }),
      )
      // every call has run its first step and waits before its second
      for (let stored = 0; stored < 8;) stored = (await session.log.read({ types: ['harness.tool.step'] })).length
      await env.crash(env.workers[0])
      expect(await Promise.all(calls)).toEqual(Array.from({ length: 8 }, (_, i) => ({ id: `c${i}`, sum: 3 })))
      const reruns = (await env.calls('two-workers')).filter((c) => c.attempts.includes('rerun')).length
      expect(reruns).toBeGreaterThan(0)
      expect(reruns).toBeLessThan(8)
      expect([...provider.done.values()].every((n) => n === 1)).toBe(true)
      expect(provider.done.size).toBe(16)
    } finally {
      await env.close()
    }
  }, 60_000)
})
