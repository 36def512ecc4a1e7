// A runTool call's step.waitForEvent parks without its BullMQ job (issue 29, row 5f): its wake-up time
// is a member of its shard's event timers; its event's sender or the workers at its timeout enqueue
// its job again; the sweeper leaves it alone, and repairs one that lost both its job and its timer.
import { toolDefinition } from '@tanstack/ai'
import { Job, Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool, ToolCallError } from '../../src/index.js'
import { SessionLog, toolJobId } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'

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
    await until(async () => (await log.eventTimer(toolCallId)) !== null, 'the call to park with its event timer')
    const queue = new Queue(toolQueueName(payments.name), { connection: log.redis, prefix: bullPrefix(prefix, log.shard, 1) })
    hosts.defer(() => queue.close())
    return { log, job: () => Job.fromId(queue, toolJobId(sessionId, toolCallId)) }
  }

  it('the event wakes it: no job while it waits, the sweeper leaves it alone, the timer is gone once it landed', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer')
    const session = host.open(payments, { sessionId: 'pay-1' })
    const result = session.runTool(
      { name: 'settle', input: { orderId: 'o-1', timeoutMs: 3_600_000 }, toolCallId: 'c-1' },
      { timeoutMs: 30_000 },
    )
    const { log, job } = await parkedWithoutJob(url, prefix, 'pay-1', 'c-1')
    expect(await job()).toBeUndefined()
    expect((await log.getCall('c-1'))?.status).toBe('parked')
    expect(await log.eventTimer('c-1')).toBeGreaterThan(Date.now() + 3_500_000)
    expect(await host.sweep({ graceMs: 0 })).toEqual([])
    expect(await host.sendEvent({ event: 'payment.settled', key: 'o-1', payload: { amount: 7 } })).toMatchObject({
      status: 'delivered',
      calls: 1,
    })
    expect(await result).toEqual({ amount: 7 })
    expect(await log.eventTimer('c-1')).toBeNull()
  })

  it('its timeout fires from the event timers: the tool gets EventTimeoutError', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer')
    const session = host.open(payments, { sessionId: 'pay-2' })
    const started = Date.now()
    const result = session.runTool(
      { name: 'settle', input: { orderId: 'o-2', timeoutMs: 1_000 }, toolCallId: 'c-2' },
      { timeoutMs: 30_000 },
    )
    await expect(result).rejects.toBeInstanceOf(ToolCallError)
    await expect(result).rejects.toMatchObject({ code: 'event_timeout' })
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000)
    expect(await logOf(url, prefix, 'pay-2').eventTimer('c-2')).toBeNull()
  })

  it('a call that lost its job and its timer (a crash between) is enqueued again by the sweeper, parks again, and wakes', async () => {
    const { host, prefix, url } = hosts.start(payments, 'evtimer')
    const session = host.open(payments, { sessionId: 'pay-3' })
    const result = session.runTool(
      { name: 'settle', input: { orderId: 'o-3', timeoutMs: 3_600_000 }, toolCallId: 'c-3' },
      { timeoutMs: 30_000 },
    )
    const { log } = await parkedWithoutJob(url, prefix, 'pay-3', 'c-3')
    const epoch = (await log.getCall('c-3'))!.epoch
    // a timer a newer park wrote is kept: this one's park is of `epoch`, not of an older one
    expect(await log.clearEventTimer('c-3', epoch - 1)).toBe(false)
    expect(await log.clearEventTimer('c-3', epoch)).toBe(true)
    expect((await host.sweep({ graceMs: 0 })).map((r) => r.reason)).toEqual(['call job vanished: enqueued again'])
    await until(async () => (await log.getCall('c-3'))!.epoch > epoch && (await log.eventTimer('c-3')) !== null, 'the call to park again')
    await host.sendEvent({ event: 'payment.settled', key: 'o-3', payload: { amount: 3 } })
    expect(await result).toEqual({ amount: 3 })
  })
})
