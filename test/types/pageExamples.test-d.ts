// The three examples of durable-tools.md, copied unchanged except the import path: they must compile.
import { toolDefinition } from '@tanstack/ai'
import { durableTool } from '../../src/index.js'
import { z } from 'zod'

declare const billing: {
  charge: (orderId: string) => Promise<{ id: string }>
  sendInvoice: (chargeId: string) => Promise<void>
}

export const checkout = durableTool(
  toolDefinition({
    name: 'checkout',
    description: 'Charge an order and send the invoice',
    inputSchema: z.object({ orderId: z.string() }),
  }),
  async ({ orderId }, { step }) => {
    const payment = await step.do(`charge:${orderId}`, () => billing.charge(orderId))
    await step.do(`invoice:${payment.id}`, () => billing.sendInvoice(payment.id))
    return { chargeId: payment.id }
  },
)

declare const mailer: {
  send: (to: string, body: string) => Promise<{ id: string }>
}

export const notify = durableTool(
  toolDefinition({
    name: 'notify',
    description: 'Email a customer',
    inputSchema: z.object({ to: z.string(), body: z.string() }),
  }),
  async ({ to, body }, { step }) => {
    const mail = await step.do(`send:${to}`, () => mailer.send(to, body))
    return { mailId: mail.id }
  },
  { replay: 'never' },
)

export const remember = durableTool(
  toolDefinition({
    name: 'remember',
    description: 'Remember a fact about the user',
    inputSchema: z.object({ fact: z.string() }),
  }),
  async ({ fact }, { append }) => {
    append([{ type: 'app.memory', fact }])
    return 'Remembered.'
  },
)

// ---- checks on the examples (below the copies, so the copies stay as the page has them) ----

import { chat, type AnyTextAdapter } from '@tanstack/ai'
import { expectTypeOf, test } from 'vitest'
import { defineHarness, type Harness, type DurableToolContext } from '../../src/index.js'

declare const adapter: AnyTextAdapter

test("checkout's step values have the types of their fn", () => {
  // the checkout body again, with the types of its values checked where they appear
  durableTool(
    toolDefinition({ name: 'checkout', description: 'd', inputSchema: z.object({ orderId: z.string() }) }),
    async ({ orderId }, { step }) => {
      expectTypeOf(orderId).toEqualTypeOf<string>()
      const payment = await step.do(`charge:${orderId}`, () => billing.charge(orderId))
      expectTypeOf(payment).toEqualTypeOf<{ id: string }>()
      const sent = await step.do(`invoice:${payment.id}`, () => billing.sendInvoice(payment.id))
      expectTypeOf(sent).toEqualTypeOf<void>()
      return { chargeId: payment.id }
    },
  )
})

test('the execute gets the tool context plus step, append and secrets', () => {
  durableTool(toolDefinition({ name: 'x', description: 'd', inputSchema: z.object({ to: z.string() }) }), async ({ to }, ctx) => {
    expectTypeOf(to).toEqualTypeOf<string>()
    expectTypeOf(ctx).toEqualTypeOf<DurableToolContext<unknown>>()
    expectTypeOf(ctx.toolCallId).toEqualTypeOf<string>()
    expectTypeOf(ctx.secrets.get).returns.toEqualTypeOf<string | undefined>()
    // @ts-expect-error a record needs a string type
    ctx.append([{ fact: 'no type' }])
    // @ts-expect-error append takes an array
    ctx.append({ type: 'app.memory' })
    // @ts-expect-error replay is 'safe' or 'never'
    durableTool(toolDefinition({ name: 'y', description: 'd', inputSchema: z.object({}) }), async () => 1, { replay: 'sometimes' })
    return 'ok'
  })
})

test('the tools are accepted by defineHarness and by chat()', () => {
  expectTypeOf(defineHarness({ name: 'shop', adapter, tools: [checkout, notify, remember] })).toEqualTypeOf<Harness>()
  const run = () => chat({ adapter, messages: [{ role: 'user', content: 'hi' }], tools: [checkout, notify, remember] })
  expectTypeOf(run).toBeFunction()
  // @ts-expect-error a tool needs a name: a plain object is not a tool
  defineHarness({ name: 'shop', adapter, tools: [{ execute: () => 1 }] })
})
