// The harness of `npm start` and of docker-compose's workers: the `checkout` tool of
// durable-tools.md against a fake billing API that records each charge in Redis.
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { defineHarness, durableTool } from '../src/index.js'
import { scriptedModel } from '../src/testing/index.js'

let redis: Redis | undefined
const db = () => (redis ??= new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null }))
const ledger = () => `${process.env.DH_PREFIX ?? 'dh'}:demo-billing`

/** A fake payment provider: counts every charge and invoice it is asked for, by idempotency key. */
export const billing = {
  async charge(orderId: string, idempotencyKey: string): Promise<{ id: string }> {
    await db().hincrby(ledger(), `charge:${orderId}`, 1)
    await db().hset(ledger(), `charge-key:${orderId}`, idempotencyKey)
    return { id: `ch_${orderId}` }
  },
  async sendInvoice(chargeId: string): Promise<void> {
    await db().hincrby(ledger(), `invoice:${chargeId}`, 1)
  },
  counts: async () => db().hgetall(ledger()),
  close: () => redis?.disconnect(),
}

const pause = () => new Promise((r) => setTimeout(r, Number(process.env.DEMO_PAUSE_MS ?? 0)))

export const checkout = durableTool(
  toolDefinition({
    name: 'checkout',
    description: 'Charge an order and send the invoice',
    inputSchema: z.object({ orderId: z.string() }),
  }),
  async ({ orderId }, { step }) => {
    const payment = await step.do(`charge:${orderId}`, ({ idempotencyKey }) => billing.charge(orderId, idempotencyKey))
    await pause() // the demo kills the worker here, between the two side effects
    await step.do(`invoice:${payment.id}`, () => billing.sendInvoice(payment.id))
    return { chargeId: payment.id }
  },
)

export const assistant = defineHarness({
  name: 'acme/assistant',
  adapter: scriptedModel([
    { toolCalls: [{ name: 'checkout', input: { orderId: '42' } }] },
    ({ messages }) => ({ text: `Order 42 is paid: ${String(messages.at(-1)?.content)}. The invoice is on its way.` }),
  ]),
  tools: [checkout],
  // tight crash detection for the demo: a dead worker's call runs again within ~3 s
  durability: { lockMs: 2_000, stalledMs: 1_000 },
})

export default assistant
