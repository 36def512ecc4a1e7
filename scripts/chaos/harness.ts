// The harness of `npm run chaos`, loaded by every worker process (and by the chaos process, which only
// prompts). Side effects go to the billing server in another process (BILLING_URL), each with a key
// that must be the same on every run of its step. Random pauses between steps so kills land mid-call.
import { randomUUID } from 'node:crypto'
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel, type ScriptEntry } from '../../src/testing/index.js'

/** What a chaos prompt asks for: `chaos:<JSON array of ChaosCall>`. */
export interface ChaosCall {
  name: 'checkout' | 'notify' | 'lookup' | 'nap'
  input: Record<string, unknown>
}
export const PROMPT_PREFIX = 'chaos:'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** 10–200 ms: long enough that a SIGKILL often lands inside a call, between or inside its steps. */
const jitter = () => sleep(10 + Math.floor(Math.random() * 190))

/**
 * One side effect at the provider. A 409 (key already used) carries the original id: the provider did
 * it once, so the step gets the same value as the first run would have.
 */
async function provider(kind: 'charge' | 'invoice' | 'mail' | 'lookup', key: string, logical: string): Promise<string> {
  const url = process.env.BILLING_URL
  if (!url) throw new Error('BILLING_URL is not set')
  const res = await fetch(`${url}/${kind}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ logical }),
    signal: AbortSignal.timeout(10_000),
  })
  const body = (await res.json()) as { id?: string; error?: string }
  if ((res.status === 200 || res.status === 409) && body.id) return body.id
  throw new Error(`billing ${kind}: HTTP ${res.status} ${body.error ?? ''}`)
}

export const checkout = durableTool(
  toolDefinition({
    name: 'checkout',
    description: 'Charge an order, then send its invoice',
    inputSchema: z.object({ orderId: z.string() }),
  }),
  async ({ orderId }, { step }) => {
    await jitter()
    const chargeId = await step.do('charge', async ({ idempotencyKey }) => {
      // CHAOS_SABOTAGE=unstable-key breaks R5 on purpose, to show the run catches a double charge
      const key = process.env.CHAOS_SABOTAGE === 'unstable-key' ? `${idempotencyKey}:${randomUUID()}` : idempotencyKey
      const id = await provider('charge', key, orderId)
      await jitter() // a kill here: charged, step not stored -> the rerun re-sends the same key
      return id
    })
    await jitter()
    const invoiceId = await step.do('invoice', async ({ idempotencyKey }) => provider('invoice', idempotencyKey, orderId))
    await jitter()
    return { orderId, chargeId, invoiceId }
  },
)

export const notify = durableTool(
  toolDefinition({ name: 'notify', description: 'Email a customer', inputSchema: z.object({ to: z.string() }) }),
  async ({ to }, { step, append }) => {
    await jitter()
    const mailId = await step.do('mail', async ({ idempotencyKey }) => {
      const id = await provider('mail', idempotencyKey, to)
      await jitter()
      return id
    })
    append([{ type: 'app.mail', to, mailId }])
    await jitter()
    return { mailId }
  },
  { replay: 'never' },
)

/** A plain tool: no steps, replay 'never'. Its key is its sku, unique per call in a chaos run. */
export const lookup = toolDefinition({ name: 'lookup', description: 'Look up stock', inputSchema: z.object({ sku: z.string() }) }).server(
  async ({ sku }) => {
    await jitter()
    await provider('lookup', `lookup:${sku}`, sku)
    await jitter()
    return { sku, stock: sku.length }
  },
)

export const nap = durableTool(
  toolDefinition({ name: 'nap', description: 'Sleep, then answer', inputSchema: z.object({ ms: z.number().int().positive() }) }),
  async ({ ms }, { step }) => {
    await jitter()
    await step.sleep('nap', ms)
    await jitter()
    const wokeAt = await step.do('woke', () => Date.now())
    return { ms, wokeAt }
  },
)

/** Each turn: the prompt's batch, then a final text with the results. Tool call ids `t<model call>-<j>`. */
const script: ScriptEntry[] = Array.from({ length: 400 }, (_, i) => ({ messages }) => {
  const last = [...messages].reverse().find((m) => m.role === 'user')
  const text = typeof last?.content === 'string' ? last.content : ''
  const ownCalls = messages.slice(messages.lastIndexOf(last!)).filter((m) => m.role === 'assistant').length
  if (ownCalls === 0 && text.startsWith(PROMPT_PREFIX)) {
    const calls = JSON.parse(text.slice(PROMPT_PREFIX.length)) as ChaosCall[]
    return { toolCalls: calls.map((c, j) => ({ ...c, id: `t${i}-${j}` })) }
  }
  const results = messages.slice(messages.lastIndexOf(last!)).filter((m) => m.role === 'tool').length
  return { text: `done: ${results} results` }
})

export const chaos = defineHarness({
  name: 'chaos',
  adapter: scriptedModel(script),
  tools: [checkout, notify, lookup, nap],
  durability: { lockMs: 1000, stalledMs: 500 },
})

export default chaos
