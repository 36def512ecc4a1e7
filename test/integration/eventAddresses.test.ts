// Machine-event addresses (docs/machine-events.md): an (event, key) is encoded one-to-one into its
// Redis key (a NUL in a name or key cannot make two addresses meet), an over-long event name or key is
// refused with its limit in the message (host.sendEvent, HTTP, CLI), and a wait may be scoped to its
// session (`scope: 'session'`; sendEvent names the session), so a key a model chose cannot reach or
// take another session's event (R20 holds for the scoped form too).
import { createHash } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { InvalidEventAddressError, InvalidIdError } from '../../src/errors/index.js'
import { createHarnessHandler, toNodeListener } from '../../src/http/index.js'
import { EventWaits, SessionLog } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { authorize, TOKEN } from '../fixtures/chat.js'
import { runBin } from '../helpers/cli.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

const waitOn = durableTool(
  toolDefinition({
    name: 'waitOn',
    description: 'Wait for an event',
    inputSchema: z.object({ event: z.string(), key: z.string(), scoped: z.boolean().optional() }),
  }),
  async ({ event, key, scoped }, { step }) =>
    step.waitForEvent({ name: 'got', event, key, timeout: '1h', ...(scoped ? { scope: 'session' as const } : {}) }),
)
const listener = defineHarness({ name: 'listener', adapter: scriptedModel([]), tools: [waitOn] })

describe('event addresses', () => {
  const hosts = useInProcessHosts()
  const parked = async (url: string, prefix: string, sessionId: string, toolCallId: string) => {
    const redis = new Redis(url)
    hosts.defer(() => redis.disconnect())
    const log = new SessionLog(redis, prefix, sessionId)
    await until(async () => (await log.calls.getCall(toolCallId))?.status === 'parked', `${sessionId} to park`)
  }
  const start = (label: string) => {
    const { host, prefix, url } = hosts.start(listener, label)
    const call = (sessionId: string, input: { event: string; key: string; scoped?: boolean }) =>
      host.open(listener, { sessionId }).runTool({ name: 'waitOn', input, toolCallId: `c-${sessionId}` }, { timeoutMs: patient(30_000) })
    return { host, prefix, url, call }
  }

  it('is one-to-one: event "ev\\0a" key "b" does not wake a call waiting on event "ev" key "a\\0b"', async () => {
    const { host, prefix, url, call } = start('evaddr')
    const result = call('nul-1', { event: 'ev', key: 'a\0b' })
    await parked(url, prefix, 'nul-1', 'c-nul-1')
    expect(await host.sendEvent({ event: 'ev\0a', key: 'b', payload: 'not yours' })).toMatchObject({ status: 'stored', calls: 0 })
    expect(await host.sendEvent({ event: 'ev', key: 'a\0b', payload: 'yours' })).toMatchObject({ status: 'delivered', calls: 1 })
    expect(await result).toBe('yours')
  })

  it('an address without a NUL keeps the Redis key older versions wrote, so a wait parked before the upgrade is still woken', async () => {
    const { prefix, url } = start('evaddr')
    const redis = new Redis(url)
    hosts.defer(() => redis.disconnect())
    const old = createHash('sha256').update('payment.settled\0order-1').digest('hex').slice(0, 20)
    expect(new EventWaits(redis, prefix).keyOf({ event: 'payment.settled', key: 'order-1' })).toBe(`${prefix}:{ev-${old}}`)
  })

  it('an over-long key or event is refused with its limit: host.sendEvent, POST control and the CLI', async () => {
    const { host, prefix, url } = start('evaddr')
    const long = 'k'.repeat(1_001)
    const refused = await host.sendEvent({ event: 'payment.settled', key: long }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(InvalidEventAddressError)
    expect((refused as Error).message).toContain('1,001 characters')
    expect((refused as Error).message).toContain('at most 1,000')
    await expect(host.sendEvent({ event: 'e'.repeat(1_001), key: 'k' })).rejects.toThrow(/event name .*at most 1,000/)
    const server = createServer(toNodeListener(createHarnessHandler({ host, harness: listener, authorize, canSendEvent: () => true })))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    hosts.defer(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))))
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/control`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: TOKEN },
      body: JSON.stringify({ op: 'event', event: 'payment.settled', key: long }),
    })
    expect(response.status).toBe(400)
    const body = (await response.json()) as { error: string }
    expect(body.error).toContain('at most 1,000 characters')
    expect(body.error).not.toContain('required')
    const cli = await runBin(['event', 'payment.settled', long], { REDIS_URL: url, DH_PREFIX: prefix })
    expect(cli.code).toBe(1)
    expect(cli.stderr).toContain('at most 1,000')
  }, 60_000)

  it('a scoped event over HTTP runs canAccess for its thread first: a denied thread gets 403 and nothing is sent', async () => {
    const { host } = start('evaccess')
    const canAccess = (_principal: unknown, threadId: string) => threadId === 'mine'
    const server = createServer(
      toNodeListener(createHarnessHandler({ host, harness: listener, authorize, canAccess, canSendEvent: () => true })),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    hosts.defer(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))))
    const send = (sessionId: string) =>
      fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/control`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TOKEN },
        body: JSON.stringify({ op: 'event', event: 'payment.settled', key: 'k-access', payload: {}, sessionId, id: `id-${sessionId}` }),
      })
    const denied = await send('theirs')
    expect(denied.status).toBe(403)
    expect(((await denied.json()) as { code: string }).code).toBe('forbidden')
    const allowed = await send('mine')
    expect(allowed.status).toBe(200)
    // the denied send used nothing up: the same id for the other thread is new, not a duplicate
    expect(
      await host.sendEvent({ event: 'payment.settled', key: 'k-access', payload: {}, sessionId: 'theirs', id: 'id-theirs' }),
    ).toMatchObject({
      status: 'stored',
    })
  })

  it("R20 scoped: an event sent to a session before its scoped wait is kept for that session's wait only", async () => {
    const { host, prefix, url, call } = start('evscope')
    const sent = await host.sendEvent({ event: 'payment.settled', key: 'order-7', sessionId: 'scope-a', payload: { amount: 7 } })
    expect(sent).toMatchObject({ status: 'stored', calls: 0 })
    // another session's scoped wait and an unscoped wait on the same (event, key) do not take it
    const other = call('scope-b', { event: 'payment.settled', key: 'order-7', scoped: true })
    const unscoped = call('scope-c', { event: 'payment.settled', key: 'order-7' })
    await parked(url, prefix, 'scope-b', 'c-scope-b')
    await parked(url, prefix, 'scope-c', 'c-scope-c')
    // its own session's scoped wait takes it without parking
    expect(await call('scope-a', { event: 'payment.settled', key: 'order-7', scoped: true })).toEqual({ amount: 7 })
    expect(await host.sendEvent({ event: 'payment.settled', key: 'order-7', payload: { amount: 1 } })).toMatchObject({ calls: 1 })
    expect(await unscoped).toEqual({ amount: 1 })
    expect(await host.sendEvent({ event: 'payment.settled', key: 'order-7', sessionId: 'scope-b', payload: { amount: 2 } })).toMatchObject({
      calls: 1,
    })
    expect(await other).toEqual({ amount: 2 })
  })

  it('R20 scoped: one event id wakes the waiting call of its own session once, and no other session', async () => {
    const { host, prefix, url, call } = start('evscope')
    const mine = call('scope-x', { event: 'pr.merged', key: '42', scoped: true })
    const theirs = call('scope-y', { event: 'pr.merged', key: '42', scoped: true })
    await parked(url, prefix, 'scope-x', 'c-scope-x')
    await parked(url, prefix, 'scope-y', 'c-scope-y')
    const send = () => host.sendEvent({ event: 'pr.merged', key: '42', sessionId: 'scope-x', payload: { sha: 'abc' }, id: 'evt-42' })
    expect(await send()).toMatchObject({ status: 'delivered', calls: 1 })
    expect(await mine).toEqual({ sha: 'abc' })
    expect(await send()).toMatchObject({ status: 'duplicate', calls: 0 })
    // an unscoped event of the same (event, key) is not for scoped waits: it is kept
    expect(await host.sendEvent({ event: 'pr.merged', key: '42', payload: { sha: 'def' } })).toMatchObject({ status: 'stored' })
    const redis = new Redis(url)
    hosts.defer(() => redis.disconnect())
    expect((await new SessionLog(redis, prefix, 'scope-y').calls.getCall('c-scope-y'))?.status).toBe('parked')
    await expect(host.sendEvent({ event: 'pr.merged', key: '42', sessionId: 'bad id', payload: 1 })).rejects.toBeInstanceOf(InvalidIdError)
    expect(await host.sendEvent({ event: 'pr.merged', key: '42', sessionId: 'scope-y', payload: { sha: 'ghi' } })).toMatchObject({
      calls: 1,
    })
    expect(await theirs).toEqual({ sha: 'ghi' })
  })
})
