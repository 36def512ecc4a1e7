// exploreCrashes (durable-harness/testing): a tool run once to find its write points, then once per
// point with a crash injected before and after the write, recovered as a worker recovers a call.
import { randomUUID } from 'node:crypto'
import { toolDefinition } from '@tanstack/ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { durableTool, type RedisClient } from '../../src/index.js'
import { exploreCrashes, type SideEffect } from '../../src/testing/index.js'
import { getRedisUrl, rigClient, uniquePrefix } from '../rig.js'

let url: string
let redis: RedisClient

beforeAll(async () => {
  url = await getRedisUrl()
  redis = rigClient(url)
  // the README's checkout keeps its fake billing ledger under DH_PREFIX: one of this file's own
  process.env.DH_PREFIX = uniquePrefix()
  process.env.REDIS_URL = url
})
afterAll(async () => {
  const { billing } = await import('../../scripts/demo-harness.js')
  billing.close()
  redis.disconnect()
})

describe('exploreCrashes', () => {
  it("the README's checkout passes at every write point, before and after each write", async () => {
    const { checkout } = await import('../../scripts/demo-harness.js')
    const report = await exploreCrashes(checkout, { orderId: '42' }, { redis: url })
    expect(report.writes).toEqual(['saveStep `charge:42`', 'saveStep `invoice:ch_42`', 'landResult'])
    expect(report.points).toHaveLength(6)
    expect(report.findings).toEqual([])
    expect(report.ok).toBe(true)
    expect(report.result).toMatchObject({ result: { chargeId: 'ch_42' } })
  })

  it('a tool that stages records, sleeps three days and asks: every point (stage, park, question, landing) passes', async () => {
    const refund = durableTool(
      toolDefinition({ name: 'refund', description: 'refund after a wait and a yes', inputSchema: z.object({ orderId: z.string() }) }),
      async ({ orderId }, { step, append }) => {
        const hold = await step.do(`hold:${orderId}`, () => ({ holdId: `h-${orderId}` }))
        append([{ type: 'app.refund.held', orderId, holdId: hold.holdId }])
        await step.sleep('cooling-off', '3d')
        const yes = await step.ask({ name: 'confirm', message: `Refund ${orderId}?`, schema: z.object({ ok: z.boolean() }) })
        await step.do(`refund:${orderId}`, () => ({ refunded: yes.ok }))
        return { refunded: yes.ok, holdId: hold.holdId }
      },
    )
    const report = await exploreCrashes(refund, { orderId: '9' }, { redis: url, answers: { confirm: { ok: true } } })
    expect(report.writes).toEqual([
      'saveStep `hold:9`',
      'stageRecords (1 record(s))',
      'saveStep `cooling-off`',
      'parkCall (sleep)',
      // each resumed attempt runs from the top and stages its records again (by position: none twice)
      'stageRecords (1 record(s))',
      'askQuestion `confirm`',
      'parkCall (ask)',
      'stageRecords (1 record(s))',
      'saveStep `refund:9`',
      'landResult',
    ])
    expect(report.findings).toEqual([])
    expect(report.points.every((p) => p.ok)).toBe(true)
  })

  it('a provider called outside step.do is reported at the exact point, with the two keys', async () => {
    const seen: SideEffect[] = []
    const provider = { charge: (key: string) => seen.push({ name: 'charge', idempotencyKey: key }) }
    const careless = durableTool(
      toolDefinition({ name: 'careless', description: 'charges outside a step', inputSchema: z.object({ orderId: z.string() }) }),
      async ({ orderId }, { step }) => {
        await step.do(`reserve:${orderId}`, () => ({ reserved: true }))
        provider.charge(randomUUID()) // outside step.do: a new key on every run
        await step.do(`receipt:${orderId}`, () => 'sent')
        return { ok: true }
      },
    )
    const report = await exploreCrashes(careless, { orderId: '7' }, { redis: url, effects: () => seen })
    expect(report.ok).toBe(false)
    // the charge ran before these writes and is not stored: each crash there makes the recovery run it again
    const twoKeys = report.findings.filter((f) => f.kind === 'two_keys')
    expect(twoKeys.map((f) => `${f.point.when} ${f.point.write}`)).toEqual([
      'before saveStep `receipt:7`',
      'after saveStep `receipt:7`',
      'before landResult',
    ])
    for (const finding of twoKeys) {
      expect(finding.effect).toBe('charge')
      expect(new Set(finding.keys).size).toBe(2)
      expect(finding.message).toContain(finding.point.write)
      for (const key of finding.keys!) expect(finding.message).toContain(key)
    }
    // the steps themselves passed: a crash before the reserve's save ran it again under its one key
    expect(report.points.filter((p) => p.ok).map((p) => `${p.when} ${p.write}`)).toEqual([
      'before saveStep `reserve:7`',
      'after saveStep `reserve:7`',
      'after landResult',
    ])
  })
  it('refuses what it does not explore with a TypeError saying so: a plain tool, an event wait, an ask with no answer given', async () => {
    const plain = toolDefinition({ name: 'plain', description: 'no steps', inputSchema: z.object({}) }).server(async () => 'ok')
    await expect(exploreCrashes(plain, {}, { redis: url })).rejects.toThrow(
      new TypeError('exploreCrashes: "plain" is not a durable tool (durableTool(...)); it explores durable tools only.'),
    )
    const waits = durableTool(
      toolDefinition({ name: 'waits', description: 'waits for a payment', inputSchema: z.object({ orderId: z.string() }) }),
      async ({ orderId }, { step }) => {
        await step.do(`reserve:${orderId}`, () => ({ reserved: true }))
        return step.waitForEvent({ name: 'paid', event: 'payment.settled', key: orderId, timeout: '1h' })
      },
    )
    await expect(exploreCrashes(waits, { orderId: '8' }, { redis: url })).rejects.toThrow(
      new TypeError(
        'exploreCrashes: the tool waits for an event (step.waitForEvent "paid"), which exploreCrashes does not explore: ' +
          'it explores step.do, step.sleep, step.ask, step retries and ctx.append. Test an event wait with a host and host.sendEvent.',
      ),
    )
    const asks = durableTool(toolDefinition({ name: 'asks', description: 'asks', inputSchema: z.object({}) }), async (_, { step }) =>
      step.ask({ name: 'confirm', message: 'Sure?', schema: z.object({ ok: z.boolean() }) }),
    )
    await expect(exploreCrashes(asks, {}, { redis: url })).rejects.toThrow(
      new TypeError('exploreCrashes: the tool asks "confirm"; give its answer in options.answers["confirm"].'),
    )
  })
})
