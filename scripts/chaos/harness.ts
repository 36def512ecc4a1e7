// The harness of `npm run chaos`, loaded by every worker process (and by the chaos process, which only
// prompts). Side effects go to the billing server in another process (BILLING_URL), each with a key
// that must be the same on every run of its step. Random pauses between steps so kills land mid-call.
//
// Every provider step has a retry policy (same key on every try, R5/R16), so a provider that fails
// at random (`--provider-faults`: timeouts, 5xx, dropped connections) heals. With CHAOS_MODEL_URL
// (set for the workers by `--provider-faults`) the model is a real `@tanstack/ai-openai` adapter
// against the billing server's faulty OpenAI-compatible route (modelRoute.ts) and a failed model
// call is retried by `turn.onModelError` (retryTransientErrors); otherwise it is scriptedModel.
import { randomUUID } from 'node:crypto'
import { toolDefinition } from '@tanstack/ai'
import { createOpenaiChatCompletions } from '@tanstack/ai-openai'
import { z } from 'zod'
import { defineHarness, durableTool, retryTransientErrors, type RetryPolicy } from '../../src/index.js'
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

/** Under faults, a request the provider holds is given up after this (then tried again). */
const FAULTY = Number(process.env.CHAOS_FAULT_RATE ?? 0) > 0
const REQUEST_TIMEOUT_MS = FAULTY ? 3_000 : 10_000
/** 10 tries, 100 ms doubling to 1 s: all waits in process (under 2 s), 0.2^10 to run out. */
const STEP_RETRY = { attempts: 10, delay: 100, backoff: 'exponential', maxDelay: 1_000 } satisfies RetryPolicy

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
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  })
  const body = (await res.json()) as { id?: string; error?: unknown }
  if ((res.status === 200 || res.status === 409) && body.id) return body.id
  throw new Error(`billing ${kind}: HTTP ${res.status} ${JSON.stringify(body.error ?? '')}`)
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
  { retry: STEP_RETRY },
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
  { replay: 'never', retry: STEP_RETRY },
)

/** A plain tool has no step.do: it retries in process as any client would, with the same key. */
async function withRetries<T>(fn: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await fn()
    } catch (error) {
      if (tries >= STEP_RETRY.attempts) throw error
      await sleep(Math.min(STEP_RETRY.maxDelay, STEP_RETRY.delay * 2 ** (tries - 1)))
    }
  }
}

/** A plain tool: no steps, replay 'never'. Its key is its sku, unique per call in a chaos run. */
export const lookup = toolDefinition({ name: 'lookup', description: 'Look up stock', inputSchema: z.object({ sku: z.string() }) }).server(
  async ({ sku }) => {
    await jitter()
    await withRetries(() => provider('lookup', `lookup:${sku}`, sku))
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

const modelUrl = process.env.CHAOS_MODEL_URL
export const chaos = defineHarness({
  name: 'chaos',
  // maxRetries 0: the turn's policy retries a failed model call, not the SDK
  adapter: modelUrl
    ? createOpenaiChatCompletions('gpt-4o-mini', 'sk-chaos', { baseURL: modelUrl, maxRetries: 0, timeout: REQUEST_TIMEOUT_MS })
    : scriptedModel(script),
  tools: [checkout, notify, lookup, nap],
  // the default policy, faster: 0.2^12 to run out
  turn: { onModelError: retryTransientErrors({ maxRetries: 12, baseDelayMs: 200, maxDelayMs: 2_000 }) },
  // CHAOS_LOCK_MS (the --liveness variant: 30 s): a killed worker's jobs then run again soon only when
  // the other workers find it gone (docs/recovery.md)
  durability: { lockMs: Number(process.env.CHAOS_LOCK_MS ?? 1000), stalledMs: 500 },
})

export default chaos
