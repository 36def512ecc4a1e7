// Durable compaction (issue 53; docs/compaction.md): a token budget of the model's view kept by
// harness.compaction records that every later model call folds in (R21: the log keeps every entry,
// the view is the same whichever worker builds it), logged once per cut (R22).
import type { ModelMessage } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import {
  clearToolResults,
  defineHarness,
  evictOldest,
  retryTransientErrors,
  summarizeOldest,
  type Harness,
  type HarnessHost,
} from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { estimateTokens } from '../../src/compaction/index.js'
import { buildMessages } from '../../src/turn/model.js'
import { turnView } from '../../src/turn/view.js'
import { SessionLog, type LogEntry } from '../../src/log/index.js'
import { quiet, useInProcessHosts } from '../helpers/hosts.js'
import { createHarnessHandler } from '../../src/http/index.js'
import { Timeline } from '../../src/timeline/items.js'
import { records, until } from '../helpers/log.js'
import { rigClient, startPrivateRedis } from '../rig.js'
import { runCompaction } from '../../src/turn/compact.js'
import { CLEARED_RESULT } from '../../src/compaction/index.js'
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { rebuiltViews } from '../helpers/modelViews.js'
import { patient } from '../helpers/patience.js'

/** A reply of about `chars` characters that names the prompt it answers. */
const replyTo = (messages: ModelMessage[], chars: number) => {
  const prompt = String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '')
  return `answer to ${prompt.slice(0, 20)}: ${'lorem ipsum dolor sit amet '.repeat(Math.ceil(chars / 27))}`.slice(0, chars)
}

/** A model that answers every call with text, reports usage as a provider would (its input, estimated), and keeps what it was sent. */
function talkingModel(seen: ModelMessage[][], chars = 400) {
  return scriptedModel(
    Array.from({ length: 500 }, () => ({ messages }: { messages: ModelMessage[] }) => {
      seen.push(messages)
      const text = replyTo(messages, chars)
      const promptTokens = estimateTokens(messages)
      const completionTokens = Math.ceil(text.length / 4)
      return { text, usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens } }
    }),
  )
}

/** A summarizer that reports usage: the summary names how many characters it read. */
const summarizer = (calls: ModelMessage[][]) =>
  scriptedModel(
    Array.from({ length: 200 }, () => ({ messages }: { messages: ModelMessage[] }) => {
      calls.push(messages)
      return {
        text: `SUMMARY(${String(messages[0]?.content ?? '').length} chars)`,
        usage: { promptTokens: 100, completionTokens: 10, totalTokens: 110 },
      }
    }),
  )

async function runTurns(host: HarnessHost, harness: Harness, sessionId: string, turns: number) {
  const session = host.open(harness, { sessionId })
  for (let i = 0; i < turns; i++) {
    const { inputId } = await session.prompt(`question ${i}`, { inputId: `q${i}` })
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed' })
  }
  return session
}

describe('compaction in process', () => {
  const hosts = useInProcessHosts()

  it('R21: summarizeOldest keeps every model call of a 30-turn session under maxTokens; the log, the conversation and the usage keep everything; a fresh host rebuilds the very view each call got', async () => {
    const seen: ModelMessage[][] = []
    const summaries: ModelMessage[][] = []
    const harness = defineHarness({
      name: 'compacting',
      adapter: talkingModel(seen),
      compaction: { maxTokens: 1_500, strategy: summarizeOldest({ keepRecentTokens: 600, summarize: summarizer(summaries) }) },
    })
    const { host } = hosts.start(harness, 'compact-summary')
    const session = await runTurns(host, harness, 'long', 30)
    expect(seen).toHaveLength(30)
    for (const messages of seen) expect(estimateTokens(messages)).toBeLessThanOrEqual(1_500)
    const entries = await session.log.read()
    const compactions = records(entries, 'harness.compaction')
    expect(compactions.length).toBeGreaterThanOrEqual(2)
    // a chain: each builds on the one before, each cuts further
    const ids = entries.filter((e) => e.record.type === 'harness.compaction').map((e) => e.id)
    expect(compactions.map((c) => c.base)).toEqual([undefined, ...ids.slice(0, -1)])
    expect(new Set(compactions.map((c) => c.through.inputId)).size).toBe(compactions.length)
    expect(compactions[0]).toMatchObject({ strategy: 'summarizeOldest', reason: 'budget', summary: expect.stringMatching(/^SUMMARY/) })
    // the summary after the first one summarizes the one before too
    expect(String(summaries[1]![0]!.content)).toContain(`Summary of the conversation before:\nSUMMARY(`)
    // the later calls see the summary first, then the turns after the cut
    expect(seen.at(-1)![0]).toEqual({ role: 'user', content: expect.stringMatching(/^Summary of the earlier conversation:\nSUMMARY\(/) })
    // R21: the log keeps every input and answer
    expect(records(entries, 'harness.input')).toHaveLength(30)
    expect(records(entries, 'harness.model.response')).toHaveLength(30)
    const conversation = await session.log.conversation()
    expect(records(conversation, 'harness.input')).toHaveLength(30)
    // R21: the view a fresh reader builds from the whole log is the one each call got
    expect(rebuiltViews(conversation)).toEqual(seen)
    // the summary calls are counted
    const usage = await session.usage()
    const responses = records(entries, 'harness.model.response').reduce((s, r) => s + r.usage.totalTokens, 0)
    expect(usage.total.totalTokens).toBe(responses + 110 * summaries.length)
  })

  it('evictOldest leaves a marker that counts the turns left out; clearToolResults stubs the results of old turns and keeps their calls', async () => {
    const seen: ModelMessage[][] = []
    const evicting = defineHarness({
      name: 'evicting',
      adapter: talkingModel(seen),
      compaction: { maxTokens: 1_200, strategy: evictOldest({ keepRecentTokens: 500 }) },
    })
    const { host } = hosts.start(evicting, 'compact-evict')
    const session = await runTurns(host, evicting, 'evict', 20)
    for (const messages of seen) expect(estimateTokens(messages)).toBeLessThanOrEqual(1_200)
    const compactions = records(await session.log.read(), 'harness.compaction')
    expect(compactions.length).toBeGreaterThanOrEqual(2)
    const last = compactions.at(-1)!
    expect(last).toMatchObject({ strategy: 'evictOldest', omitted: Number(last.through.inputId.slice(1)) + 1 })
    expect(last.summary).toBeUndefined()
    expect(seen.at(-1)![0]).toEqual({ role: 'user', content: `[${last.omitted} earlier turns of this conversation are not shown.]` })
    expect(rebuiltViews(await session.log.conversation())).toEqual(seen)

    // clearToolResults: a lookup call each turn, its big result stubbed once the turn is old
    const seenClear: ModelMessage[][] = []
    const lookup = toolDefinition({ name: 'lookup', description: 'Looks up', inputSchema: z.object({ q: z.string() }) }).server(
      async ({ q }) => `${q}: ${'x'.repeat(1_200)}`,
    )
    const clearing = defineHarness({
      name: 'clearing',
      adapter: scriptedModel(
        Array.from({ length: 100 }, (_, call) => ({ messages }: { messages: ModelMessage[] }) => {
          seenClear.push(messages)
          return messages.at(-1)!.role === 'tool'
            ? { text: `done ${call}` }
            : { toolCalls: [{ name: 'lookup', input: { q: `q${call}` }, id: `lk-${seenClear.length}` }] }
        }),
      ),
      tools: [lookup],
      compaction: { maxTokens: 1_200, strategy: clearToolResults({ keepRecentTokens: 500 }) },
    })
    const other = hosts.start(clearing, 'compact-clear')
    const cleared = await runTurns(other.host, clearing, 'clear', 6)
    const [first] = records(await cleared.log.read(), 'harness.compaction')
    expect(first).toMatchObject({ strategy: 'clearToolResults', cleared: { inputId: expect.any(String) } })
    expect(first!.through).toBeUndefined()
    const lastView = seenClear.at(-1)!
    const tools = lastView.filter((m) => m.role === 'tool').map((m) => String(m.content))
    expect(tools[0]).toBe(CLEARED_RESULT)
    expect(tools.at(-1)).toMatch(/^q\d+: x+/)
    // the calls stay, with their stubbed results right after them
    expect(lastView.filter((m) => m.role === 'assistant' && m.toolCalls?.length).length).toBe(tools.length)
    // the log keeps the results as they were (R21)
    expect(records(await cleared.log.read(), 'harness.tool.result').every((r) => String(r.result).includes('xxx'))).toBe(true)
  })

  it("session.compact() compacts now, with its principal, and the next turn's view starts with the summary; with nothing to cut it logs nothing; a harness without compaction is refused", async () => {
    const seen: ModelMessage[][] = []
    const harness = defineHarness({
      name: 'manual',
      adapter: talkingModel(seen),
      compaction: {
        maxTokens: 50_000,
        strategy: summarizeOldest({ keepRecentTokens: 300, summarize: async ({ messages }) => `${messages.length} messages` }),
      },
    })
    const { host } = hosts.start(harness, 'compact-manual')
    const session = await runTurns(host, harness, 'manual', 6)
    const done = await session.compact({ principal: 'ops@acme' })
    expect(done).toMatchObject({
      compacted: true,
      entryId: expect.any(String),
      tokens: { before: expect.any(Number), after: expect.any(Number) },
    })
    expect(done.tokens.after!).toBeLessThan(done.tokens.before)
    const [record] = records(await session.log.read(), 'harness.compaction')
    expect(record).toMatchObject({ reason: 'manual', principal: 'ops@acme', summary: expect.stringMatching(/^\d+ messages$/) })
    expect(record!.inputId).toBeUndefined()
    expect(await session.compact()).toEqual({ compacted: false, tokens: { before: expect.any(Number) } })
    const { inputId } = await session.prompt('after the compaction')
    await session.settled(inputId)
    expect(seen.at(-1)![0]!.content).toMatch(/^Summary of the earlier conversation:\n\d+ messages$/)
    expect(rebuiltViews(await session.log.conversation())).toEqual(seen)

    // over HTTP: POST control { op: 'compact' } compacts with the caller as principal (nothing left here)
    const handler = createHarnessHandler({ host, harness, authorize: () => ({ id: 'ops@http' }) })
    const control = (body: object) =>
      handler(
        new Request('http://dh.test/api/control', {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        }),
      )
    for (let i = 0; i < 6; i++) {
      const { inputId } = await session.prompt(`more ${i}`)
      await session.settled(inputId)
    }
    const receipt = await (await control({ op: 'compact', threadId: 'manual' })).json()
    expect(receipt).toMatchObject({ op: 'compact', threadId: 'manual', status: 'compacted', compacted: true, entryId: expect.any(String) })
    expect(records(await session.log.read(), 'harness.compaction').at(-1)).toMatchObject({ reason: 'manual', principal: 'ops@http' })
    expect(await (await control({ op: 'compact', threadId: 'manual' })).json()).toMatchObject({
      status: 'nothing_to_compact',
      compacted: false,
    })
    // the timeline shows each compaction, with who asked
    const timeline = new Timeline()
    const lines: string[] = []
    for await (const event of session.events({ follow: false })) lines.push(...timeline.push(event).map((item) => item.text))
    expect(lines.filter((l) => l.startsWith('compacted'))).toEqual([
      expect.stringMatching(/^compacted \(summarizeOldest, manual\) by ops@acme: turns through q\d summarized; ~\d+ -> ~\d+ tokens$/),
      expect.stringMatching(/^compacted \(summarizeOldest, manual\) by ops@http: turns through \S+ summarized/),
    ])

    const plain = defineHarness({ name: 'plain', adapter: talkingModel([]) })
    const other = hosts.start(plain, 'compact-none')
    await expect(other.host.open(plain, { sessionId: 'x' }).compact()).rejects.toMatchObject({
      code: 'config',
      message: expect.stringContaining('no compaction option'),
    })
  })

  it('R22: two compactions of one view log one record; a summary that lands after a newer compaction cut further is dropped as stale', async () => {
    const seen: ModelMessage[][] = []
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const slow = summarizeOldest({
      keepRecentTokens: 300,
      summarize: async () => {
        await held
        return 'slow summary'
      },
    })
    const harness = defineHarness({ name: 'racing', adapter: talkingModel(seen), compaction: { maxTokens: 50_000, strategy: slow } })
    const { host, prefix, url } = hosts.start(harness, 'compact-r22')
    const session = await runTurns(host, harness, 'race', 8)
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const log = new SessionLog(redis, prefix, 'race')
    const conversation = await log.inputs.conversation()
    const view = turnView(conversation, '', [])
    const run = (h: Harness) =>
      runCompaction({
        harness: h,
        log,
        logger: quiet,
        conversation,
        joined: [],
        view,
        reason: 'manual',
        signal: new AbortController().signal,
      })
    // the same view twice, at once: one lands, one is stale
    const both = Promise.all([run(harness), run(harness)])
    release()
    const outcomes = (await both).map((o) => o.status).sort()
    expect(outcomes).toEqual(['compacted', 'stale'])
    expect(records(await session.log.read(), 'harness.compaction')).toHaveLength(1)

    // a slow summary of the new view, overtaken by an eviction that cuts further: dropped
    const nextConversation = await log.inputs.conversation()
    const next = turnView(nextConversation, '', [])
    let releaseLate = () => {}
    const late = new Promise<void>((resolve) => (releaseLate = resolve))
    const lateSummary = {
      ...harness,
      compaction: {
        ...harness.compaction!,
        strategy: summarizeOldest({ keepRecentTokens: 200, summarize: async () => (await late, 'late') }),
      },
    }
    const evicting = { ...harness, compaction: { ...harness.compaction!, strategy: evictOldest({ keepRecentTokens: 100 }) } }
    const summarizing = runCompaction({ ...runArgs(log, nextConversation, next), harness: lateSummary })
    const evicted = await runCompaction({ ...runArgs(log, nextConversation, next), harness: evicting })
    releaseLate()
    expect(evicted.status).toBe('compacted')
    expect((await summarizing).status).toBe('stale')
    const all = records(await session.log.read(), 'harness.compaction')
    expect(all.map((c) => c.strategy)).toEqual(['summarizeOldest', 'evictOldest'])
  })

  it('background: past atTokens the summary is prepared beside the turn, which does not wait for it; it applies at the first model call after it landed', async () => {
    const seen: ModelMessage[][] = []
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    let started = 0
    const harness = defineHarness({
      name: 'background',
      adapter: talkingModel(seen),
      compaction: {
        maxTokens: 5_000,
        background: { atTokens: 800 },
        strategy: summarizeOldest({ keepRecentTokens: 300, summarize: async () => (started++, await held, 'prepared summary') }),
      },
    })
    const { host } = hosts.start(harness, 'compact-background')
    const session = host.open(harness, { sessionId: 'bg' })
    let turn = 0
    while (started === 0) {
      const { inputId } = await session.prompt(`question ${turn}`, { inputId: `q${turn++}` })
      await session.settled(inputId)
    }
    // the summary is held: three more turns complete without it
    for (let i = 0; i < 3; i++) {
      const { inputId } = await session.prompt(`question ${turn}`, { inputId: `q${turn++}` })
      expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed' })
    }
    expect(records(await session.log.read(), 'harness.compaction')).toEqual([])
    expect(started).toBe(1) // one background compaction of a view at a time in a process
    release()
    await until(async () => records(await session.log.read(), 'harness.compaction').length === 1, 'the background compaction to land')
    expect(records(await session.log.read(), 'harness.compaction')[0]).toMatchObject({ reason: 'background', summary: 'prepared summary' })
    const { inputId } = await session.prompt('after it', { inputId: 'after' })
    await session.settled(inputId)
    expect(seen.at(-1)![0]!.content).toBe('Summary of the earlier conversation:\nprepared summary')
    expect(rebuiltViews(await session.log.conversation())).toEqual(seen)
  })

  it('a context overflow compacts once and calls the model again in the same turn; a second overflow fails the turn with context_overflow and the sizes', async () => {
    const seen: ModelMessage[][] = []
    const LIMIT = 1_000
    const model = scriptedModel(
      Array.from({ length: 200 }, () => ({ messages }: { messages: ModelMessage[] }) => {
        const tokens = estimateTokens(messages)
        if (tokens > LIMIT)
          throw Object.assign(
            new Error(
              `This model's maximum context length is ${LIMIT} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
            ),
            { code: 'context_length_exceeded' },
          )
        seen.push(messages)
        return { text: replyTo(messages, 400) }
      }),
    )
    const harness = defineHarness({
      name: 'overflowing',
      adapter: model,
      compaction: { maxTokens: 100_000, strategy: evictOldest({ keepRecentTokens: 600 }) },
    })
    const { host } = hosts.start(harness, 'compact-overflow')
    const session = await runTurns(host, harness, 'overflow', 12)
    const compactions = records(await session.log.read(), 'harness.compaction')
    expect(compactions.length).toBeGreaterThanOrEqual(1)
    expect(compactions.every((c) => c.reason === 'overflow')).toBe(true)
    expect(records(await session.log.read(), 'harness.turn.retry')).toEqual([])

    const { inputId } = await session.prompt(`huge ${'word '.repeat(1_000)}`, { inputId: 'huge' })
    const settled = await session.settled(inputId)
    expect(settled).toMatchObject({ outcome: 'failed', error: { code: 'context_overflow' } })
    expect(settled.error!.message).toMatch(
      /overflowed (again after a compaction|and there was nothing left to compact): the view counts ~\d+ tokens here \(the provider counted \d+ tokens of 1000\)/,
    )
  })

  it('the summary call is a model call like any other: turn.onModelError decides its failure (with compaction: true), a retry is a harness.turn.retry; its text is redacted of session secrets', async () => {
    const seen: ModelMessage[][] = []
    const contexts: Array<{ compaction?: boolean; error: { message: string } }> = []
    let failures = 1
    const summarizing = scriptedModel(
      Array.from({ length: 20 }, () => () => {
        if (failures-- > 0) throw Object.assign(new Error('503 The server is overloaded.'), { status: 503 })
        return {
          text: 'the user gave key sk-live-SECRET-1234 and asked twice',
          usage: { promptTokens: 50, completionTokens: 5, totalTokens: 55 },
        }
      }),
    )
    const harness = defineHarness({
      name: 'summary-errors',
      adapter: talkingModel(seen),
      secrets: () => ({ KEY: 'sk-live-SECRET-1234' }),
      turn: {
        onModelError: (ctx) => {
          contexts.push(ctx)
          return retryTransientErrors({ baseDelayMs: 10 })(ctx)
        },
      },
      compaction: { maxTokens: 1_000, strategy: summarizeOldest({ keepRecentTokens: 300, summarize: summarizing }) },
    })
    const { host } = hosts.start(harness, 'compact-summary-error')
    const session = await runTurns(host, harness, 'summary-error', 12)
    expect(contexts[0]).toMatchObject({ compaction: true, error: { message: expect.stringContaining('503') } })
    const entries = await session.log.read()
    expect(records(entries, 'harness.turn.retry')[0]).toMatchObject({ attempt: 1, error: { message: expect.stringContaining('503') } })
    const [first] = records(entries, 'harness.compaction')
    expect(first).toMatchObject({ summary: 'the user gave key [redacted] and asked twice', usage: { totalTokens: 55 } })
    expect(JSON.stringify(entries)).not.toContain('sk-live-SECRET-1234')

    // a permanent failure: the policy fails the turn with the summary call's error
    const failing = defineHarness({
      name: 'summary-fails',
      adapter: talkingModel([]),
      compaction: {
        maxTokens: 1_000,
        strategy: summarizeOldest({
          keepRecentTokens: 300,
          summarize: scriptedModel([
            () => {
              throw Object.assign(new Error('400 Invalid model'), { status: 400 })
            },
          ]),
        }),
      },
    })
    const other = hosts.start(failing, 'compact-summary-fails')
    const doomed = other.host.open(failing, { sessionId: 'fails' })
    let outcome
    for (let i = 0; i < 12 && outcome?.outcome !== 'failed'; i++) {
      const { inputId } = await doomed.prompt(`question ${i} ${'padding '.repeat(30)}`)
      outcome = await doomed.settled(inputId)
    }
    expect(outcome).toMatchObject({
      outcome: 'failed',
      error: { code: 'model_error', message: expect.stringContaining('400 Invalid model') },
    })
  })

  it('R21: a view reads from the latest compaction on (item 6: O(the view)), the same view as from the whole conversation; a rerun of a turn the compaction cut sees the summary and itself', async () => {
    const seen: ModelMessage[][] = []
    let failFirst = true
    const model = scriptedModel(
      Array.from({ length: 200 }, () => ({ messages }: { messages: ModelMessage[] }) => {
        if (failFirst && messages.at(-1)!.content === 'question 0') {
          failFirst = false
          throw Object.assign(new Error('400 bad request'), { status: 400 })
        }
        seen.push(messages)
        return { text: replyTo(messages, 400) }
      }),
    )
    const harness = defineHarness({
      name: 'reading',
      adapter: model,
      compaction: { maxTokens: 1_000, strategy: evictOldest({ keepRecentTokens: 300 }) },
    })
    const { host, prefix, url } = hosts.start(harness, 'compact-read')
    const session = host.open(harness, { sessionId: 'read' })
    for (let i = 0; i < 15; i++) {
      const { inputId } = await session.prompt(`question ${i}`, { inputId: `q${i}` })
      await session.settled(inputId)
    }
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const log = new SessionLog(redis, prefix, 'read')
    const full = await log.inputs.conversation()
    const since = await log.inputs.conversation({ since: 'compaction' })
    expect(since.partial).toBe(true)
    const compactions = full.filter((e) => e.record.type === 'harness.compaction')
    const cut = (compactions.at(-1)!.record as { through: { entryId: string } }).through.entryId
    // the read starts right after the last cut turn's input, and holds the rest of the conversation
    expect(since.entries[0]!.id).toBe(full[full.findIndex((e) => e.id === cut) + 1]!.id)
    expect(full.slice(-since.entries.length)).toEqual(since.entries)
    // it holds the inputs of the turns the view shows, no older one
    expect(records(since.entries, 'harness.input').length).toBe(turnView(full, '', []).turns.length)
    expect(since.entries.length).toBeLessThan(full.length)
    // the view is the same from either read (R21)
    expect(buildMessages(turnView(since.entries, '', []).entries)).toEqual(buildMessages(turnView(full, '', []).entries))

    // q0 failed, then the compactions cut it: a rerun sees the summary marker and q0 alone
    expect(await session.settled('q0')).toMatchObject({ outcome: 'failed' })
    expect(await session.rerun('q0')).toBe(true)
    expect(await session.settled('q0')).toMatchObject({ outcome: 'completed' })
    const rerunView = seen.at(-1)!
    expect(rerunView.map((m) => m.role)).toEqual(['user', 'user'])
    expect(rerunView[0]!.content).toMatch(/earlier turns of this conversation are not shown/)
    expect(rerunView[1]!.content).toBe('question 0')
  })

  it('R21: Redis SIGKILLed and restarted from its AOF after compactions: the records and the read pointer survive, and the next turn sees the same view', async () => {
    const server = await startPrivateRedis()
    hosts.defer(() => server.stop())
    const seen: ModelMessage[][] = []
    const harness = defineHarness({
      name: 'restarting',
      adapter: talkingModel(seen),
      compaction: { maxTokens: 1_000, strategy: evictOldest({ keepRecentTokens: 300 }) },
    })
    const { host, prefix } = hosts.start(harness, 'compact-aof', { redis: server.url })
    const session = await runTurns(host, harness, 'aof', 15)
    const before = await session.log.read({ types: ['harness.compaction'] })
    expect(before.length).toBeGreaterThanOrEqual(1)
    await server.kill()
    await server.restart()
    expect(await session.log.read({ types: ['harness.compaction'] })).toEqual(before)
    const redis = rigClient(server.url)
    hosts.defer(() => redis.disconnect())
    const read = await new SessionLog(redis, prefix, 'aof').inputs.conversation({ since: 'compaction' })
    expect(read.partial).toBe(true)
    const { inputId } = await session.prompt('after the restart', { inputId: 'after' })
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
    expect(seen.at(-1)![0]!.content).toMatch(/earlier turns of this conversation are not shown/)
    expect(rebuiltViews(await session.log.conversation())).toEqual(seen)
  })
})

function runArgs(log: SessionLog, conversation: LogEntry[], view: ReturnType<typeof turnView>) {
  return { log, logger: quiet, conversation, joined: [], view, reason: 'manual' as const, signal: new AbortController().signal }
}
