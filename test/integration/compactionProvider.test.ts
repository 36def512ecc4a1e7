// Context overflow with a real provider adapter (issue 53 item 3): `@tanstack/ai-openai`'s Chat
// Completions adapter against the suite's OpenAI-compatible server, which answers a request over its
// context length with OpenAI's 400 `context_length_exceeded`. The turn compacts (a summary written by
// the same adapter) and calls again; a request still over the length after that fails the turn with
// `context_overflow` and the sizes.
import { createOpenaiChatCompletions } from '@tanstack/ai-openai'
import { describe, expect, it } from 'vitest'
import { defineHarness, summarizeOldest } from '../../src/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'
import { startModelServer, type ChatRequest } from '../helpers/openaiServer.js'

/** The server's context length, in its tokens (characters / 4 of the messages). */
const CONTEXT_LENGTH = 2_000
const tokensOf = (request: ChatRequest) => Math.ceil(request.messages.reduce((n, m) => n + (m.content ?? '').length, 0) / 4)
const isSummaryCall = (request: ChatRequest) => request.messages[0]?.role === 'system' && /summary/.test(request.messages[0].content ?? '')

describe('a context overflow from @tanstack/ai-openai heals by compaction', () => {
  const hosts = useInProcessHosts()

  it('the turn compacts and completes; a second overflow fails it with context_overflow and the sizes', async () => {
    const server = await startModelServer(
      (request) => {
        const usage = { prompt_tokens: tokensOf(request), completion_tokens: 20, total_tokens: tokensOf(request) + 20 }
        if (isSummaryCall(request)) return { text: ['SUMMARY of ', `${request.messages[1]!.content!.length} chars`], usage }
        const prompt = request.messages.filter((m) => m.role === 'user').at(-1)!.content!
        return { text: [`answer to ${prompt.slice(0, 12)}: `, 'ok '.repeat(100)], usage }
      },
      {
        fault: (request) => {
          const tokens = tokensOf(request)
          if (tokens <= CONTEXT_LENGTH) return undefined
          return {
            status: 400,
            body: {
              error: {
                message: `This model's maximum context length is ${CONTEXT_LENGTH} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
                type: 'invalid_request_error',
                code: 'context_length_exceeded',
              },
            },
          }
        },
      },
    )
    hosts.defer(() => server.close())
    const harness = defineHarness({
      name: 'openai-overflow',
      adapter: createOpenaiChatCompletions('gpt-4o-mini', 'sk-test', { baseURL: server.baseURL, maxRetries: 0 }),
      // a budget the count never reaches: only the provider's refusal compacts
      compaction: { maxTokens: 100_000, strategy: summarizeOldest({ keepRecentTokens: 600 }) },
    })
    const { host } = hosts.start(harness, 'compact-openai')
    const session = host.open(harness, { sessionId: 'openai' })
    for (let i = 0; i < 12; i++) {
      const { inputId } = await session.prompt(`question ${i}: ${'context '.repeat(100)}`, { inputId: `q${i}` })
      expect(await session.settled(inputId)).toMatchObject({
        outcome: 'completed',
        text: expect.stringMatching(new RegExp(`^answer to question ${i}`)),
      })
    }
    const refused = server.requests.filter((r) => tokensOf(r) > CONTEXT_LENGTH)
    expect(refused.length).toBeGreaterThanOrEqual(1)
    const entries = await session.log.read()
    const compactions = records(entries, 'harness.compaction')
    expect(compactions.length).toBe(refused.length)
    expect(compactions[0]).toMatchObject({
      reason: 'overflow',
      strategy: 'summarizeOldest',
      summary: expect.stringMatching(/^SUMMARY of \d+ chars$/),
      usage: { completionTokens: 20 },
    })
    // the call after the refused one: the summary first, under the length
    const after = server.requests[server.requests.indexOf(refused[0]!) + 2]!
    expect(after.messages[0]).toEqual({ role: 'user', content: expect.stringMatching(/^Summary of the earlier conversation:\nSUMMARY of/) })
    expect(tokensOf(after)).toBeLessThanOrEqual(CONTEXT_LENGTH)
    expect(records(entries, 'harness.turn.retry')).toEqual([])

    // one input over the length by itself: compacted once, refused again, the turn fails with the sizes
    const { inputId } = await session.prompt(`too long ${'word '.repeat(2_000)}`, { inputId: 'huge' })
    const settled = await session.settled(inputId)
    expect(settled).toEqual({
      outcome: 'failed',
      error: {
        code: 'context_overflow',
        message: expect.stringMatching(
          /^The model's context overflowed (again after a compaction|and there was nothing left to compact): the view counts ~\d+ tokens here \(the provider counted \d+ tokens of 2000\)\. The provider: 400 This model's maximum context length is 2000 tokens/,
        ),
      },
    })
  })
})
