// Compaction's pure parts (docs/compaction.md): the options' checks, the overflow test of the
// providers' error shapes, the strategies' cuts, what a plan changes, and the view folding a
// compaction in the same way from the whole conversation and from the compaction's read pointer (R21).
import { EventType } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import {
  CLEARED_RESULT,
  evictOldest,
  clearToolResults,
  isContextOverflowError,
  lastTurnToCut,
  nextCompaction,
  overflowSizes,
  resolveCompaction,
  summarizeOldest,
} from '../../src/compaction/index.js'
import type { CompactionInput } from '../../src/core/index.js'
import type { LogEntry, LogRecord } from '../../src/log/index.js'
import { buildMessages } from '../../src/turn/model.js'
import { turnView } from '../../src/turn/view.js'
import { parseDuration } from '../../src/tool/index.js'
import { defineHarness } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'

describe('compaction options', () => {
  const harness = (compaction: unknown) => () => defineHarness({ name: 'h', adapter: scriptedModel([]), compaction: compaction as never })

  it.each([
    [{ maxTokens: 0 }, /maxTokens must be a positive integer, got 0/],
    [{ maxTokens: 1.5 }, /maxTokens must be a positive integer/],
    [{ maxTokens: 1_000, contextWindow: 900 }, /contextWindow must be an integer ≥ maxTokens \(1000\), got 900/],
    [{ maxTokens: 1_000, countTokens: 'words' }, /countTokens must be 'estimate' or 'usage'/],
    [{ maxTokens: 1_000, background: { atTokens: 1_000 } }, /background.atTokens must be a positive integer under maxTokens \(1000\)/],
    [
      { maxTokens: 1_000, strategy: summarizeOldest({ keepRecentTokens: 1_000 }) },
      /keepRecentTokens \(1000\) must be under maxTokens \(1000\)/,
    ],
    [{ maxTokens: 1_000, strategy: evictOldest({ keepRecentTokens: 2_000 }) }, /keepRecentTokens \(2000\) must be under maxTokens/],
    [{ maxTokens: 1_000, strategy: { name: 'x' } }, /strategy must be evictOldest\(\)/],
    [{ maxTokens: 1_000, trimAfter: '30 days' }, /trimAfter .*not a number of ms or a string like 90s/],
    [{ maxTokens: 1_000, trimAfter: 0 }, /trimAfter must be longer than 0/],
    [{ maxTokens: 1_000, trimAfter: '400d' }, /trimAfter .*over 365 days/],
    [{ maxTokens: 1_000, trim: '30d' }, /unknown option "trim"/],
    ['8000', /must be an object/],
  ])('defineHarness refuses %j with a CompactionConfigError (code config)', (compaction, message) => {
    expect(harness(compaction)).toThrow(message)
    try {
      harness(compaction)()
    } catch (error) {
      expect(error).toMatchObject({ name: 'CompactionConfigError', code: 'config' })
    }
  })

  it('the strategies check their own options; the default strategy is summarizeOldest keeping maxTokens / 2', () => {
    expect(() => summarizeOldest({ keepRecentTokens: -1 })).toThrow(/summarizeOldest: keepRecentTokens must be a positive integer, got -1/)
    expect(() => summarizeOldest({ keepRecentTokens: 10, cut: 'message' as never })).toThrow(/cut must be 'turn'/)
    expect(() => summarizeOldest({ keepRecentTokens: 10, summarize: 'gpt' as never })).toThrow(
      /summarize must be a @tanstack\/ai text adapter or a function/,
    )
    expect(() => clearToolResults({ keepRecentTokens: 0 })).toThrow(/clearToolResults: keepRecentTokens/)
    expect(resolveCompaction('h', { maxTokens: 8_000, trimAfter: '2d' }, parseDuration)).toMatchObject({
      trimAfterMs: 2 * 86_400_000,
    })
    expect(resolveCompaction('h', { maxTokens: 8_000 }, parseDuration)).toMatchObject({
      maxTokens: 8_000,
      countTokens: 'estimate',
      strategy: { name: 'summarizeOldest', keepRecentTokens: 4_000 },
    })
    expect(resolveCompaction('h', undefined, parseDuration)).toBeUndefined()
  })
})

describe('isContextOverflowError', () => {
  const openai = {
    message:
      "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
    code: 'context_length_exceeded',
  }
  it.each([
    [
      '@tanstack/ai-openai RUN_ERROR (Chat Completions)',
      { type: EventType.RUN_ERROR, message: openai.message, code: openai.code, error: openai },
    ],
    ["the policy's ModelError (code only)", { message: 'Bad request', code: 'context_length_exceeded' }],
    [
      'OpenAI Responses',
      { message: 'Your input exceeds the context window of this model. Please adjust your input and try again.', code: '400' },
    ],
    [
      'Anthropic',
      {
        message:
          '400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}',
        code: '400',
      },
    ],
    [
      'Anthropic SDK error body',
      {
        status: 400,
        error: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } },
      },
    ],
    [
      'Anthropic max_tokens',
      {
        message:
          'input length and `max_tokens` exceed context limit: 195000 + 21333 > 200000, decrease input length or `max_tokens` and try again',
      },
    ],
    [
      'Gemini',
      {
        message:
          '{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}',
      },
    ],
    ['Bedrock', new Error('Input is too long for requested model.')],
    ['llama.cpp', 'the request exceeds the available context size, try increasing it'],
  ])('recognizes %s', (_name, error) => {
    expect(isContextOverflowError(error)).toBe(true)
  })
  it.each([
    [
      'a rate limit counting tokens',
      {
        message: 'Rate limit reached for gpt-4o: Limit 30000, Used 29000, Requested 2000 tokens per min (TPM).',
        code: 'rate_limit_exceeded',
      },
    ],
    ['a 503', { message: '503 The server is overloaded.', code: '503' }],
    ['a bad key', { message: '401 Incorrect API key provided', code: 'invalid_api_key' }],
    ['nothing', undefined],
  ])('does not take %s for one', (_name, error) => {
    expect(isContextOverflowError(error)).toBe(false)
  })
  it('reads the sizes the providers give', () => {
    expect(overflowSizes(openai.message)).toEqual({ tokens: 130512, limit: 128000 })
    expect(overflowSizes('prompt is too long: 208310 tokens > 200000 maximum')).toEqual({ tokens: 208310, limit: 200000 })
    expect(overflowSizes('The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).')).toEqual({
      tokens: 1200000,
      limit: 1048576,
    })
    expect(overflowSizes('too big')).toEqual({})
  })
})

describe('strategies', () => {
  const input = (tokens: number[], current: number, reason: CompactionInput['reason'] = 'budget'): CompactionInput => ({
    sessionId: 's',
    reason,
    turns: tokens.map((t, i) => ({ inputId: `t${i}`, messages: [{ role: 'user', content: `t${i}` }], tokens: t })),
    currentTokens: current,
    overheadTokens: 0,
    tokens: tokens.reduce((a, b) => a + b, current),
    maxTokens: 1_000,
    model: async () => 'summary',
    signal: new AbortController().signal,
  })
  it('keep the newest turns that fit, with the running turn, and cut at a turn boundary; an overflow keeps at most half', () => {
    expect(lastTurnToCut(input([100, 100, 100, 100], 100), 300)).toBe(1)
    expect(lastTurnToCut(input([100, 100], 50), 300)).toBe(-1)
    expect(lastTurnToCut(input([100, 100, 100], 400), 300)).toBe(2) // the running turn alone is over: cut them all
    expect(lastTurnToCut(input([100, 100, 100, 100], 100, 'overflow'), 10_000)).toBe(2) // half of 500, less the running turn: one turn kept
  })
  it('summarizeOldest summarizes what it cuts after the summary before; evictOldest cuts with no call; clearToolResults names the newest turn with a result', async () => {
    const requests: unknown[] = []
    const summary = await summarizeOldest({ keepRecentTokens: 250 }).compact({
      ...input([100, 100, 100], 100),
      summary: 'before',
      model: async (r) => (requests.push(r), 'new'),
    })
    expect(summary).toEqual({ through: 't1', summary: 'new' })
    expect(requests).toEqual([
      {
        messages: [{ role: 'user', content: 'Summary of the conversation before:\nbefore\n\nUser: t0\nUser: t1' }],
        systemPrompts: [expect.stringContaining('summary')],
      },
    ])
    expect(await evictOldest({ keepRecentTokens: 250 }).compact(input([100, 100, 100], 100))).toEqual({ through: 't1' })
    const withResult = { ...input([100, 100, 100], 100) }
    withResult.turns = withResult.turns.map((t, i) =>
      i === 0 ? { ...t, messages: [...t.messages, { role: 'tool', content: 'r', toolCallId: 'c' }] } : t,
    )
    expect(await clearToolResults({ keepRecentTokens: 250 }).compact(withResult)).toEqual({ clearToolResultsThrough: 't0' })
    expect(await clearToolResults({ keepRecentTokens: 250 }).compact(input([100, 100, 100], 100))).toBeUndefined()
  })
})

describe('what a plan changes', () => {
  const turns = ['a', 'b', 'c', 'd'].map((inputId, i) => ({ inputId, entryId: `1-${i * 10}` }))
  const meta = { strategy: 's', reason: 'budget' as const }
  it('a cut with a summary replaces the summary before; one without adds to the count of turns left out; a clear the cut covers changes nothing', () => {
    expect(nextCompaction(undefined, { through: 'b', summary: 'S' }, turns, meta)).toMatchObject({
      through: { inputId: 'b' },
      summary: 'S',
    })
    const evicted = nextCompaction(undefined, { through: 'b' }, turns, meta)!
    expect(evicted).toMatchObject({ through: { inputId: 'b' }, omitted: 2 })
    const previous = { ...evicted, tokens: { before: 1, after: 1 }, entryId: '1-99' }
    expect(nextCompaction(previous, { through: 'd' }, turns.slice(2), meta)).toMatchObject({ base: '1-99', omitted: 4 })
    expect(nextCompaction(previous, { through: 'c', summary: 'all' }, turns.slice(2), meta)).toMatchObject({ summary: 'all' })
    expect(nextCompaction(previous, { through: 'c', summary: 'all' }, turns.slice(2), meta)!.omitted).toBeUndefined()
    expect(nextCompaction(undefined, { through: 'c', clearToolResultsThrough: 'b' }, turns, meta)!.cleared).toBeUndefined()
    expect(nextCompaction(undefined, {}, turns, meta)).toBeUndefined()
    const cleared = {
      ...nextCompaction(undefined, { clearToolResultsThrough: 'b' }, turns, meta)!,
      tokens: { before: 1, after: 1 },
      entryId: '1-98',
    }
    expect(cleared.cleared).toEqual({ inputId: 'b', entryId: '1-10' })
    expect(nextCompaction(cleared, { clearToolResultsThrough: 'a' }, turns, meta)).toBeUndefined()
    expect(() => nextCompaction(undefined, { through: 'zz' }, turns, meta)).toThrow(/names through "zz", which is no turn it was given/)
  })
})

describe('R21: the view folds the latest compaction in the same way from any read', () => {
  let seq = 0
  const entry = (record: Record<string, unknown>): LogEntry => ({ id: `1-${seq++}`, record: record as LogRecord })
  it('the turns through the cut are left out, the summary comes first, cleared results read as a stub; reading from the pointer gives the same view', () => {
    const log: LogEntry[] = []
    const turn = (id: string, withCall: boolean) => {
      const input = entry({ type: 'harness.input', inputId: id, text: `q ${id}`, at: 1 })
      log.push(input)
      if (withCall) {
        log.push(entry({ type: 'harness.model.response', inputId: id, toolCalls: [{ toolCallId: `c-${id}`, name: 'lookup', input: {} }] }))
        log.push(entry({ type: 'harness.tool.result', toolCallId: `c-${id}`, name: 'lookup', result: `result ${id}` }))
      }
      log.push(entry({ type: 'harness.model.response', inputId: id, text: `a ${id}`, toolCalls: [] }))
      log.push(entry({ type: 'harness.input.settled', inputId: id, outcome: 'completed' }))
      return input
    }
    turn('a', true)
    const b = turn('b', true)
    const c = turn('c', true)
    turn('d', false)
    // d's input was logged before the compaction; e comes after it
    log.push(
      entry({
        type: 'harness.compaction',
        strategy: 's',
        reason: 'budget',
        through: { inputId: 'b', entryId: b.id },
        summary: 'A and B',
        cleared: { inputId: 'c', entryId: c.id },
        tokens: { before: 10, after: 5 },
        at: 1,
      }),
    )
    const e = entry({ type: 'harness.input', inputId: 'e', text: 'q e', at: 1 })
    log.push(e)
    const full = turnView(log, 'e', [])
    const messages = buildMessages(full.entries)
    expect(messages.map((m) => `${m.role}:${String(m.content)}`)).toEqual([
      'user:Summary of the earlier conversation:\nA and B',
      'user:q c',
      'assistant:null',
      `tool:${CLEARED_RESULT}`,
      'assistant:a c',
      'user:q d',
      'assistant:a d',
      'user:q e',
    ])
    expect(full.turns.map((t) => t.inputId)).toEqual(['c', 'd'])
    // the read pointer: the entry right after the last cut turn's input (logCompaction.lua)
    const pointer = log.findIndex((x) => x.id === b.id) + 1
    expect(buildMessages(turnView(log.slice(pointer), 'e', []).entries)).toEqual(messages)
    // and the log itself is untouched (the stub is the view's)
    expect(JSON.stringify(log)).toContain('result c')
  })
})
