// The example's agent: a scripted model (no network, no API key) that streams its answers word by
// word, a durable `lookup` tool with one step, and a `refund` tool that needs a person's approval. Put a real adapter (e.g. @tanstack/ai-openai) in
// its place for a real model.
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel, type ScriptedResponse } from '../../src/testing/index.js'

const lookup = durableTool(
  toolDefinition({ name: 'lookup', description: 'Look up the stock of a product', inputSchema: z.object({ sku: z.string() }) }),
  async ({ sku }, { step }) => step.do(`stock:${sku}`, () => ({ sku, stock: 3 })),
)

// needsApproval: the call waits (durably, on no worker) until a person approves it on the page
const refund = toolDefinition({
  name: 'refund',
  description: 'Refund an order',
  inputSchema: z.object({ order: z.string() }),
  needsApproval: true,
}).server(async ({ order }) => ({ order, refunded: true }))

const textOf = (message: ModelMessage | undefined) => (typeof message?.content === 'string' ? message.content : '')

function respond({ messages }: { messages: ModelMessage[] }): ScriptedResponse {
  const last = messages.at(-1)
  const prompt = textOf(last)
  if (last?.role === 'tool') {
    const result = textOf(last)
    if (result.includes('refunded')) return { text: `Refund done: ${result}.` }
    if (result.includes('error')) return { text: `No refund: ${result}.` }
    return { text: `The warehouse says: ${result}. Anything else?` }
  }
  const order = /refund (order-\w+)/.exec(prompt)?.[1]
  if (order) return { toolCalls: [{ name: 'refund', input: { order } }] }
  const sku = /sku-\w+/.exec(prompt)?.[0]
  if (sku) return { toolCalls: [{ name: 'lookup', input: { sku } }] }
  return {
    text: `You asked: "${prompt}". I am a scripted model, streaming this answer to you piece by piece, from a worker, through Redis.`,
  }
}

export const chatExample = defineHarness({
  name: 'example/chat',
  adapter: scriptedModel(
    Array.from({ length: 200 }, () => respond),
    { stream: { chars: 6, delayMs: 40 } },
  ),
  tools: [lookup, refund],
})
