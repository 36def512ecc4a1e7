// ctx.context: the context given with an input (session.prompt(text, { context })) reaches every tool
// call of its turn, durable and plain; a context that is not JSON, too large or holds a secret is refused.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { patient } from '../helpers/patience.js'

const hosts = useInProcessHosts()
const SECRET = 'sk_live_context_secret_1234'

const durableWho = durableTool(
  toolDefinition({ name: 'durableWho', description: 'context of a durable tool', inputSchema: z.object({}) }),
  async (_input, { context, step }) => {
    await step.sleep('short', 10) // a resumed attempt sees the context too
    return { context: context ?? null }
  },
)
const plainWho = toolDefinition({ name: 'plainWho', description: 'context of a plain tool', inputSchema: z.object({}) }).server(
  async (_input, ctx) => ({ context: ctx?.context ?? null }),
)

const harness = defineHarness({
  name: 'context',
  adapter: scriptedModel(
    Array.from(
      { length: 20 },
      () =>
        ({ messages }: { messages: Array<{ role: string }> }) =>
          messages[messages.length - 1]?.role === 'tool'
            ? { text: 'done' }
            : {
                toolCalls: [
                  { name: 'durableWho', input: {} },
                  { name: 'plainWho', input: {} },
                ],
              },
    ),
  ),
  tools: [durableWho, plainWho],
  secrets: () => ({ KEY: SECRET }),
  durability: { maxValueBytes: 1024 },
})

describe('ctx.context carries the input context', () => {
  it('prompt(text, { context }) gives every tool call of the turn the context as ctx.context, durable and plain', async () => {
    const { host } = hosts.start(harness, 'context')
    const session = host.open(harness, { sessionId: 'ctx' })
    const context = { user: 'ada', tags: [], nested: { a: [1, 2] } }
    const { inputId } = await session.prompt('who?', { context })
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
    const byName = (r: { name?: string }, o: { name?: string }) => String(r.name).localeCompare(String(o.name))
    const results = (await session.log.read({ types: ['harness.tool.result'] })).map((e) => e.record as { name?: string }).sort(byName)
    expect(results).toEqual([
      expect.objectContaining({ name: 'durableWho', result: { context } }),
      expect.objectContaining({ name: 'plainWho', result: { context } }),
    ])
    // kept with the input in the log
    const [input] = await session.log.read({ types: ['harness.input'] })
    expect(input?.record).toMatchObject({ inputId, context })
    // a prompt without one: ctx.context is undefined
    const plain = await session.prompt('again')
    await session.settled(plain.inputId, { timeoutMs: patient(30_000) })
    const later = (await session.log.read({ types: ['harness.tool.result'] })).slice(2).map((e) => e.record)
    expect(later).toMatchObject([{ result: { context: null } }, { result: { context: null } }])
  })

  it('a context that is not JSON, over maxValueBytes or holding a session secret is refused and nothing is logged', async () => {
    const { host } = hosts.start(harness, 'context-refused')
    const session = host.open(harness, { sessionId: 'ctx-refused' })
    await expect(session.prompt('x', { context: { n: 1n } })).rejects.toThrow(/Context of prompt/)
    await expect(session.prompt('x', { context: { big: 'x'.repeat(2048) } })).rejects.toMatchObject({ code: 'value_too_large' })
    await expect(session.prompt('x', { context: { auth: `Bearer ${SECRET}` } })).rejects.toThrow(/Context of prompt/)
    expect(await session.log.read()).toEqual([])
  })
})
