// Machine events (step.waitForEvent, host.sendEvent, POST control { op: 'event' }) over a worker
// process and a webhook server process: a checkout waits 3 days for `payment.settled` keyed by its
// order id without a worker slot, and wakes on the webhook's POST from another process (R20).
import { Job, Queue } from 'bullmq'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventTimeoutError, InvalidEventPayloadError } from '../../src/index.js'
import { callWaitMember, EventWaits, toolJobId } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { orders, WEBHOOK_TOKEN } from '../fixtures/orders.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { records, until } from '../helpers/log.js'
import { queuePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const DAY = 86_400_000

describe('machine events over a worker process and a webhook server process', () => {
  const ctx = useWorkerProcesses({ label: 'events', harnesses: [orders], module: 'test/fixtures/orders.ts', workers: 1 })
  let webhook: WorkerProcess
  let base: string
  beforeAll(async () => {
    webhook = await spawnWorker({
      entry: 'test/fixtures/ordersServer.ts',
      module: 'test/fixtures/orders.ts',
      redisUrl: ctx.url,
      prefix: ctx.prefix,
    })
    base = `http://127.0.0.1:${webhook.lines.find((l) => l.msg === 'http server started')!.port}/api`
  })
  afterAll(async () => {
    await webhook?.kill('SIGKILL')
  })

  const post = (body: unknown, token = WEBHOOK_TOKEN) =>
    fetch(`${base}/control`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: token },
      body: JSON.stringify(body),
    })
  const settledEvent = (orderId: string, payload: unknown, id?: string) =>
    post({ op: 'event', event: 'payment.settled', key: orderId, payload, ...(id ? { id } : {}) })

  /** The checkout call's job as it is now (its log says it parked). */
  async function jobOf(sessionId: string) {
    const session = ctx.host.open(orders, { sessionId })
    let toolCallId = ''
    await until(async () => {
      const parked = records(await session.log.read(), 'harness.tool.suspended')
      toolCallId = String(parked[0]?.toolCallId ?? '')
      return parked.length > 0
    }, 'the checkout call to park')
    const queue = new Queue(toolQueueName(orders.name), { connection: ctx.redis, prefix: queuePrefix(ctx.prefix, sessionId) })
    try {
      const job = await Job.fromId(queue, toolJobId(sessionId, toolCallId))
      // the park logs its record, then moves its job to delayed: until then the job is still active
      let state = await job!.getState()
      await until(async () => (state = await job!.getState()) !== 'active', 'the parked job to leave active')
      return { state, delayUntil: job!.timestamp + job!.delay, toolCallId }
    } finally {
      await queue.close()
    }
  }

  /**
   * The checkout call's job once it is parked: a delayed job, no worker slot. The log's
   * suspended entry comes a moment before the job leaves the active list, and an event that
   * lands in that moment is taken at once (R20), so a test that sends after this waits for both.
   */
  async function parkedJob(sessionId: string) {
    let job = await jobOf(sessionId)
    await until(async () => (job = await jobOf(sessionId)).state === 'delayed', 'the checkout job to be delayed')
    return job
  }

  it('R20 one event id wakes a waiting call once: a checkout parked for 3 days wakes on the webhook POST; a resend with the id is a no-op', async () => {
    const session = ctx.host.open(orders, { sessionId: 'order-1' })
    const { inputId } = await session.prompt('checkout:o-1')
    const parked = await parkedJob('order-1')
    expect(parked.state).toBe('delayed')
    expect(parked.delayUntil - Date.now()).toBeGreaterThan(3 * DAY - 60_000)
    const [wait] = records(await session.log.read(), 'harness.tool.wait')
    expect(wait).toMatchObject({ name: 'settled', event: 'payment.settled', key: 'o-1' })

    const first = await settledEvent('o-1', { amount: 42, currency: 'EUR' }, 'evt-1')
    expect(first.status).toBe(200)
    expect(await first.json()).toMatchObject({ op: 'event', status: 'delivered', calls: 1 })
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toEqual({
      outcome: 'completed',
      text: 'done: {"orderId":"o-1","paid":"42 EUR"}',
    })
    const again = await settledEvent('o-1', { amount: 42, currency: 'EUR' }, 'evt-1')
    expect(await again.json()).toMatchObject({ status: 'duplicate', calls: 0 })
    const log = await session.log.read()
    expect(records(log, 'harness.tool.event')).toEqual([
      expect.objectContaining({ name: 'settled', event: 'payment.settled', key: 'o-1', payload: { amount: 42, currency: 'EUR' } }),
    ])
    expect(records(log, 'harness.tool.result')).toHaveLength(1)
    // woken by the event: a resume, never a cut (R14)
    expect(records(log, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh'])
  })

  it('R20 an event sent before its wait is not lost: it is kept and the first wait that asks takes it, without parking', async () => {
    const sent = await settledEvent('o-2', { amount: 7, currency: 'USD' }, 'evt-2')
    expect(await sent.json()).toMatchObject({ status: 'stored', calls: 0 })
    const session = ctx.host.open(orders, { sessionId: 'order-2' })
    const { inputId } = await session.prompt('checkout:o-2')
    expect((await session.settled(inputId, { timeoutMs: patient(30_000) })).text).toBe('done: {"orderId":"o-2","paid":"7 USD"}')
    expect(records(await session.log.read(), 'harness.tool.suspended')).toEqual([])
    // consumed: a second wait on the same key does not get it again
    const second = ctx.host.open(orders, { sessionId: 'order-2b' })
    await second.prompt('checkout:o-2')
    expect((await jobOf('order-2b')).state).toBe('delayed')
    expect(await (await settledEvent('o-2', { amount: 7, currency: 'USD' }, 'evt-2')).json()).toMatchObject({ status: 'duplicate' })
  })

  it('a payload the waiting call refuses is a 400 with the schema message and wakes nothing; a good one then wakes it', async () => {
    const session = ctx.host.open(orders, { sessionId: 'order-3' })
    const { inputId } = await session.prompt('checkout:o-3')
    await parkedJob('order-3')
    // the waiter's entry names its schema, kept once by its digest: the entry stays small (docs/decisions/event-wait-memory.md)
    const waits = new EventWaits(ctx.redis, ctx.prefix)
    const [waiter] = Object.values(await ctx.redis.hgetall(waits.keyOf({ event: 'payment.settled', key: 'o-3' })))
    const digest = /\n#([\w-]+)$/.exec(waiter ?? '')?.[1]
    expect(JSON.parse((await ctx.redis.hget(waits.schemasKey, digest ?? '')) ?? 'null')).toMatchObject({ type: 'object' })
    const bad = await settledEvent('o-3', { amount: 'lots', currency: 'EUR' }, 'evt-3-bad')
    expect(bad.status).toBe(400)
    const body = (await bad.json()) as { code: string; error: string }
    expect(body.code).toBe('invalid_event_payload')
    expect(body.error).toMatch(/payment\.settled.*amount/s)
    await expect(ctx.other.sendEvent({ event: 'payment.settled', key: 'o-3', payload: { currency: 'EUR' } })).rejects.toBeInstanceOf(
      InvalidEventPayloadError,
    )
    expect((await jobOf('order-3')).state).toBe('delayed')
    expect(records(await session.log.read(), 'harness.tool.event')).toEqual([])
    // the refused id was not used up: nothing of the refused send was stored
    expect(await (await settledEvent('o-3', { amount: 1, currency: 'EUR' }, 'evt-3-bad')).json()).toMatchObject({
      status: 'delivered',
      calls: 1,
    })
    expect((await session.settled(inputId, { timeoutMs: patient(30_000) })).text).toBe('done: {"orderId":"o-3","paid":"1 EUR"}')
  })

  it('the event op is behind authorize and canSendEvent: 401 without a principal, 403 for an event it may not send', async () => {
    expect((await settledEvent('o-x', { amount: 1, currency: 'EUR' })).status).toBe(200)
    expect((await post({ op: 'event', event: 'payment.settled', key: 'o-x', payload: {} }, 'Bearer nobody')).status).toBe(401)
    const forbidden = await post({ op: 'event', event: 'shipment.arrived', key: 'o-x', payload: {} })
    expect(forbidden.status).toBe(403)
    expect((await post({ op: 'event', key: 'o-x' })).status).toBe(400)
  })

  it('no event before the timeout: the tool gets EventTimeoutError (a tool error the model reads)', async () => {
    const session = ctx.host.open(orders, { sessionId: 'order-4' })
    const { inputId } = await session.prompt('checkout:o-4:1s')
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled.text).toContain('No event \\"payment.settled\\" with key \\"o-4\\" arrived before')
    expect(records(await session.log.read(), 'harness.tool.result')[0]).toMatchObject({ error: { code: 'event_timeout' } })
    expect(new EventTimeoutError('e', 'k', 'now').code).toBe('event_timeout')
    // the wait is gone: a later event is kept for the next wait, it wakes nothing
    expect(await ctx.host.sendEvent({ event: 'payment.settled', key: 'o-4', payload: { amount: 1, currency: 'EUR' } })).toMatchObject({
      status: 'stored',
    })
  })

  it('one event wakes every call waiting on its (event, key), each on its own session', async () => {
    const a = ctx.host.open(orders, { sessionId: 'order-5a' })
    const b = ctx.host.open(orders, { sessionId: 'order-5b' })
    const [ia, ib] = await Promise.all([a.prompt('checkout:o-5'), b.prompt('checkout:o-5')])
    await Promise.all([parkedJob('order-5a'), parkedJob('order-5b')])
    expect(await ctx.other.sendEvent({ event: 'payment.settled', key: 'o-5', payload: { amount: 5, currency: 'EUR' } })).toMatchObject({
      status: 'delivered',
      calls: 2,
    })
    expect((await a.settled(ia.inputId, { timeoutMs: patient(30_000) })).outcome).toBe('completed')
    expect((await b.settled(ib.inputId, { timeoutMs: patient(30_000) })).outcome).toBe('completed')
  })

  it('cancelOn: an order.cancelled event for the order aborts its open checkout turn and cancels the parked call', async () => {
    const session = ctx.host.open(orders, { sessionId: 'order-6' })
    const { inputId } = await session.prompt('checkout:o-6')
    await parkedJob('order-6')
    const other = ctx.host.open(orders, { sessionId: 'order-6b' })
    const kept = await other.prompt('checkout:o-6b')
    await parkedJob('order-6b')
    expect(await ctx.other.sendEvent({ event: 'order.cancelled', key: 'o-6', payload: { reason: 'customer' } })).toMatchObject({
      status: 'delivered',
      calls: 0,
      turns: 1,
    })
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'aborted' })
    expect(records(await session.log.read(), 'harness.tool.result')[0]).toMatchObject({ error: { code: 'cancelled' } })
    // another order's turn goes on waiting
    expect((await jobOf('order-6b')).state).toBe('delayed')
    await ctx.other.sendEvent({ event: 'payment.settled', key: 'o-6b', payload: { amount: 3, currency: 'EUR' } })
    expect((await other.settled(kept.inputId, { timeoutMs: patient(30_000) })).outcome).toBe('completed')
  })

  it('R20 a worker that dies right after the payload was stored: the next attempt returns the stored payload, the event is not needed again', async () => {
    // a second worker takes the call again when the first one dies
    ctx.workers.push(await ctx.spawn())
    const session = ctx.host.open(orders, { sessionId: 'order-7' })
    const { inputId } = await session.prompt('checkout:o-7:3d:crash')
    await parkedJob('order-7')
    expect(
      await ctx.other.sendEvent({ event: 'payment.settled', key: 'o-7', payload: { amount: 70, currency: 'EUR' }, id: 'evt-7' }),
    ).toMatchObject({
      status: 'delivered',
      calls: 1,
    })
    expect((await session.settled(inputId, { timeoutMs: patient(60_000) })).text).toBe('done: {"orderId":"o-7","paid":"70 EUR"}')
    expect(await ctx.redis.get(`${ctx.prefix}:crashed:o-7`)).toBe('1')
    const log = await session.log.read()
    expect(records(log, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(records(log, 'harness.tool.event')).toHaveLength(1)
    // the event's entries are gone: the run again read the stored step, not the event
    expect(
      await ctx.other.sendEvent({ event: 'payment.settled', key: 'o-7', payload: { amount: 70, currency: 'EUR' }, id: 'evt-7' }),
    ).toMatchObject({
      status: 'duplicate',
      calls: 0,
    })
  })

  it('R20 a sender that died between the delivery and the wake-up: its resend with the same id wakes the call', async () => {
    const session = ctx.host.open(orders, { sessionId: 'order-8' })
    const { inputId } = await session.prompt('checkout:o-8')
    const { toolCallId } = await parkedJob('order-8')
    // the delivery script alone, as a sender that died before it promoted the job
    const delivered = await new EventWaits(ctx.redis, ctx.prefix).deliver(
      { event: 'payment.settled', key: 'o-8' },
      { uid: 'u-8', id: 'evt-8', payload: JSON.stringify({ amount: 8, currency: 'EUR' }) },
      [callWaitMember('order-8', toolCallId, 'settled')],
    )
    expect(delivered).toMatchObject({
      status: 'delivered',
      waiters: [{ kind: 'call', sessionId: 'order-8', id: toolCallId, harness: 'orders' }],
    })
    expect((await jobOf('order-8')).state).toBe('delayed')
    const resent = await settledEvent('o-8', { amount: 999, currency: 'EUR' }, 'evt-8')
    expect(await resent.json()).toMatchObject({ status: 'duplicate', calls: 1 })
    // the first delivery's payload, not the resend's
    expect((await session.settled(inputId, { timeoutMs: patient(30_000) })).text).toBe('done: {"orderId":"o-8","paid":"8 EUR"}')
  })

  it("R20 scoped: a webhook POST with sessionId wakes only its session's scoped wait, once; a worker SIGKILLed after the payload was stored loses nothing", async () => {
    ctx.workers.push(await ctx.spawn())
    const session = ctx.host.open(orders, { sessionId: 'order-9' })
    const other = ctx.host.open(orders, { sessionId: 'order-9b' })
    const { inputId } = await session.prompt('checkout:o-9:3d:crash:scoped')
    const waiting = await other.prompt('checkout:o-9:3d:scoped')
    await Promise.all([parkedJob('order-9'), parkedJob('order-9b')])
    const [wait] = records(await session.log.read(), 'harness.tool.wait')
    expect(wait).toMatchObject({ key: 'o-9', scope: 'session' })
    const send = () =>
      post({
        op: 'event',
        event: 'payment.settled',
        key: 'o-9',
        sessionId: 'order-9',
        payload: { amount: 9, currency: 'EUR' },
        id: 'evt-9',
      })
    expect(await (await send()).json()).toMatchObject({ op: 'event', sessionId: 'order-9', status: 'delivered', calls: 1 })
    expect((await session.settled(inputId, { timeoutMs: patient(60_000) })).text).toBe('done: {"orderId":"o-9","paid":"9 EUR"}')
    expect(await ctx.redis.get(`${ctx.prefix}:crashed:o-9`)).toBe('1')
    expect(records(await session.log.read(), 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(await (await send()).json()).toMatchObject({ status: 'duplicate', calls: 0 })
    // the other session's scoped wait on the same order was not woken; an unscoped send does not reach it either
    expect((await jobOf('order-9b')).state).toBe('delayed')
    expect(await (await settledEvent('o-9', { amount: 1, currency: 'EUR' })).json()).toMatchObject({ status: 'stored', calls: 0 })
    expect((await jobOf('order-9b')).state).toBe('delayed')
    await ctx.other.sendEvent({ event: 'payment.settled', key: 'o-9', sessionId: 'order-9b', payload: { amount: 2, currency: 'EUR' } })
    expect((await other.settled(waiting.inputId, { timeoutMs: patient(30_000) })).text).toBe('done: {"orderId":"o-9","paid":"2 EUR"}')
  })
})
