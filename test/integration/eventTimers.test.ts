// A runTool call's step.waitForEvent parks without its BullMQ job (issue 29, row 5f): its wake-up time
// is a member of its shard's event timers; its event's sender or the workers at its timeout enqueue
// its job again; the sweeper leaves it alone, and repairs one that lost both its job and its timer.
import { toolDefinition } from '@tanstack/ai'
import { Job, Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, ToolCallError } from '../../src/index.js'
import { callWaitMember, clearEventTimer, eventTimerOf, EventWaits, SessionLog, toolJobId } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { quiet, useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

const settle = durableTool(
  toolDefinition({
    name: 'settle',
    description: 'Wait for a payment',
    inputSchema: z.object({ orderId: z.string(), timeoutMs: z.number() }),
  }),
  async ({ orderId, timeoutMs }, { step }) =>
    step.waitForEvent({
      name: 'settled',
      event: 'payment.settled',
      key: orderId,
      schema: z.object({ amount: z.number() }),
      timeout: timeoutMs,
    }),
)
const payments = defineHarness({ name: 'payments', adapter: scriptedModel([]), tools: [settle] })

describe('event waits of runTool calls park without a BullMQ job (event timers)', () => {
  const hosts = useInProcessHosts()
  const logOf = (url: string, prefix: string, sessionId: string) => {
    const redis = new Redis(url)
    hosts.defer(() => redis.disconnect())
    return new SessionLog(redis, prefix, sessionId)
  }

  async function parkedWithoutJob(url: string, prefix: string, sessionId: string, toolCallId: string) {
    const log = logOf(url, prefix, sessionId)
    await until(async () => (await eventTimerOf(log.stream, toolCallId)) !== null, 'the call to park with its event timer')
    const queue = new Queue(toolQueueName(payments.name), { connection: log.stream.redis, prefix: bullPrefix(prefix, log.stream.shard, 1) })
    hosts.defer(() => queue.close())
    return { log, job: () => Job.fromId(queue, toolJobId(sessionId, toolCallId)) }
  }

  it('the event wakes it: no job while it waits, the sweeper leaves it alone, the timer is gone once it landed', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer')
    const session = host.open(payments, { sessionId: 'pay-1' })
    const result = session.runTool(
      { name: 'settle', input: { orderId: 'o-1', timeoutMs: 3_600_000 }, toolCallId: 'c-1' },
      { timeoutMs: patient(30_000) },
    )
    const { log, job } = await parkedWithoutJob(url, prefix, 'pay-1', 'c-1')
    expect(await job()).toBeUndefined()
    expect((await log.calls.getCall('c-1'))?.status).toBe('parked')
    expect(await eventTimerOf(log.stream, 'c-1')).toBeGreaterThan(Date.now() + 3_500_000)
    expect(await host.sweep({ graceMs: 0 })).toEqual([])
    expect(await host.sendEvent({ event: 'payment.settled', key: 'o-1', payload: { amount: 7 } })).toMatchObject({
      status: 'delivered',
      calls: 1,
    })
    expect(await result).toEqual({ amount: 7 })
    expect(await eventTimerOf(log.stream, 'c-1')).toBeNull()
  })

  it('R20 host.stats() counts a call parked without its job (its event timer) as a parked call, and no longer once it landed', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer')
    const session = host.open(payments, { sessionId: 'pay-s' })
    const result = session.runTool(
      { name: 'settle', input: { orderId: 'o-s', timeoutMs: 3_600_000 }, toolCallId: 'c-s' },
      { timeoutMs: patient(30_000) },
    )
    const { job } = await parkedWithoutJob(url, prefix, 'pay-s', 'c-s')
    expect(await job()).toBeUndefined()
    const stats = await host.stats()
    expect(stats.queues.reduce((n, q) => n + q.counts.delayed, 0)).toBe(0)
    expect(stats.parkedCalls).toBe(1)
    await host.sendEvent({ event: 'payment.settled', key: 'o-s', payload: { amount: 1 } })
    expect(await result).toEqual({ amount: 1 })
    expect((await host.stats()).parkedCalls).toBe(0)
  })

  it('a sender that does not run the harness (a webhook server) enqueues the call by its harness name', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer')
    const result = host
      .open(payments, { sessionId: 'pay-4' })
      .runTool({ name: 'settle', input: { orderId: 'o-4', timeoutMs: 3_600_000 }, toolCallId: 'c-4' }, { timeoutMs: patient(30_000) })
    const { job } = await parkedWithoutJob(url, prefix, 'pay-4', 'c-4')
    expect(await job()).toBeUndefined()
    const other = defineHarness({ name: 'webhooks', adapter: scriptedModel([]), tools: [] })
    const sender = createHarnessHost({ redis: url, harnesses: [other], prefix, logger: quiet })
    hosts.defer(() => sender.close())
    expect(await sender.sendEvent({ event: 'payment.settled', key: 'o-4', payload: { amount: 4 } })).toMatchObject({ calls: 1 })
    expect(await result).toEqual({ amount: 4 })
  })

  it('an event sent while the wait parks (its job not yet gone) still wakes it: the parker checks again once its job is gone', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer', { concurrency: 10 })
    const results = Array.from({ length: 20 }, async (_, i) => {
      const log = logOf(url, prefix, `race-${i}`)
      const result = host
        .open(payments, { sessionId: `race-${i}` })
        .runTool(
          { name: 'settle', input: { orderId: `r-${i}`, timeoutMs: 3_600_000 }, toolCallId: `r-${i}` },
          { timeoutMs: patient(30_000) },
        )
      // send as soon as the wait is registered: its job is still there for a few round trips (parkCall, then its completion)
      const waits = new EventWaits(log.stream.redis, prefix)
      const field = `w\0${callWaitMember(`race-${i}`, `r-${i}`, 'settled')}`
      const deadline = Date.now() + 20_000
      while (!(await log.stream.redis.hexists(waits.keyOf({ event: 'payment.settled', key: `r-${i}` }), field))) {
        if (Date.now() > deadline) throw new Error('timed out waiting for the wait to register')
      }
      // delivered to the registered wait, or kept before it registered (the wait takes it without parking)
      await host.sendEvent({ event: 'payment.settled', key: `r-${i}`, payload: { amount: i } })
      return result
    })
    expect(await Promise.all(results)).toEqual(Array.from({ length: 20 }, (_, i) => ({ amount: i })))
  })

  it('its timeout fires from the event timers: the tool gets EventTimeoutError', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer')
    const session = host.open(payments, { sessionId: 'pay-2' })
    const started = Date.now()
    const result = session.runTool(
      { name: 'settle', input: { orderId: 'o-2', timeoutMs: 1_000 }, toolCallId: 'c-2' },
      { timeoutMs: patient(30_000) },
    )
    await expect(result).rejects.toBeInstanceOf(ToolCallError)
    await expect(result).rejects.toMatchObject({ code: 'event_timeout' })
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000)
    expect(await eventTimerOf(logOf(url, prefix, 'pay-2').stream, 'c-2')).toBeNull()
  })

  it('a call that lost its job and its timer (a crash between) is enqueued again by the sweeper, parks again, and wakes', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer')
    const session = host.open(payments, { sessionId: 'pay-3' })
    const result = session.runTool(
      { name: 'settle', input: { orderId: 'o-3', timeoutMs: 3_600_000 }, toolCallId: 'c-3' },
      { timeoutMs: patient(30_000) },
    )
    const { log } = await parkedWithoutJob(url, prefix, 'pay-3', 'c-3')
    const epoch = (await log.calls.getCall('c-3'))!.epoch
    // a timer a newer park wrote is kept: this one's park is of `epoch`, not of an older one
    expect(await clearEventTimer(log.stream, 'c-3', epoch - 1)).toBe(false)
    expect(await clearEventTimer(log.stream, 'c-3', epoch)).toBe(true)
    expect((await host.sweep({ graceMs: 0 })).map((r) => r.reason)).toEqual(['call job vanished: enqueued again'])
    await until(
      async () => (await log.calls.getCall('c-3'))!.epoch > epoch && (await eventTimerOf(log.stream, 'c-3')) !== null,
      'the call to park again',
    )
    await host.sendEvent({ event: 'payment.settled', key: 'o-3', payload: { amount: 3 } })
    expect(await result).toEqual({ amount: 3 })
  })
})
