// A harness module in plain JavaScript, as an app ships one: what docker-compose.yml and the Dockerfile
// run with `harness worker` / `harness sweep`. The README's `checkout` tool against a fake billing API
// that counts each charge in Redis, and a scripted model (no API key); put your adapter in its place.
// (`npm start` runs the TypeScript twin of this module, scripts/demo-harness.ts, from the source.)
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { defineHarness, durableTool } from 'durable-harness'
import { scriptedModel } from 'durable-harness/testing'

let redis
const db = () => (redis ??= new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null }))
const ledger = () => `${process.env.DH_PREFIX ?? 'dh'}:demo-billing`

const billing = {
  async charge(orderId, idempotencyKey) {
    await db().hincrby(ledger(), `charge:${orderId}`, 1)
    await db().hset(ledger(), `charge-key:${orderId}`, idempotencyKey)
    return { id: `ch_${orderId}` }
  },
  async sendInvoice(chargeId) {
    await db().hincrby(ledger(), `invoice:${chargeId}`, 1)
  },
}

export const checkout = durableTool(
  toolDefinition({
    name: 'checkout',
    description: 'Charge an order and send the invoice',
    inputSchema: z.object({ orderId: z.string() }),
  }),
  async ({ orderId }, { step }) => {
    const payment = await step.do(`charge:${orderId}`, ({ idempotencyKey }) => billing.charge(orderId, idempotencyKey))
    await step.do(`invoice:${payment.id}`, () => billing.sendInvoice(payment.id))
    return { chargeId: payment.id }
  },
)

export default defineHarness({
  name: 'acme/assistant',
  adapter: scriptedModel([
    { toolCalls: [{ name: 'checkout', input: { orderId: '42' } }] },
    ({ messages }) => ({ text: `Order 42 is paid: ${String(messages.at(-1)?.content)}. The invoice is on its way.` }),
  ]),
  tools: [checkout],
})
