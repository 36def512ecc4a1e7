// Harness module of the million-waiting-calls bench (million.ts), loaded by its worker processes and by
// the bench process: three ways a call waits for days (a timer, a person, a machine) and a short nap
// whose wake-up lateness is measured while the others wait.
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'

/** step.sleep for `ms`; the result says when the call went on (for the lateness figure). */
const nap = durableTool(
  toolDefinition({ name: 'nap', description: 'Sleep, then say when it went on', inputSchema: z.object({ ms: z.number() }) }),
  async ({ ms }, { step }) => {
    await step.sleep('nap', ms)
    return { continuedAt: Date.now() }
  },
)

/** step.ask: waits for a person's yes or no until `until` (ms since the epoch). */
const approve = durableTool(
  toolDefinition({ name: 'approve', description: 'Ask a person to approve', inputSchema: z.object({ until: z.number() }) }),
  async ({ until }, { step }) => step.ask({ name: 'ok', message: 'Approve the refund?', schema: z.boolean(), expiresAt: until }),
)

/** step.waitForEvent: waits for a machine's payment.settled event on `orderId`, for 3 days. */
const settle = durableTool(
  toolDefinition({ name: 'settle', description: 'Wait for a payment', inputSchema: z.object({ orderId: z.string() }) }),
  async ({ orderId }, { step }) =>
    step.waitForEvent({ name: 'settled', event: 'payment.settled', key: orderId, schema: z.object({ amount: z.number() }), timeout: '3d' }),
)

export const millionHarness = defineHarness({ name: 'bench-million', adapter: scriptedModel([]), tools: [nap, approve, settle] })
