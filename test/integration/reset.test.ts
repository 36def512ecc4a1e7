// session.reset(note?) (issue 53 item 4; docs/compaction.md, "Reset"): the model's context starts
// over from the note, logged as a compaction record (strategy and reason 'reset') every later view
// folds in (R21: the log keeps every entry; the view is the same whichever host builds it).
import type { ModelMessage } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { defineHarness, summarizeOldest, type Harness, type HarnessHost } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { createHarnessHandler } from '../../src/http/index.js'
import { Timeline } from '../../src/timeline/items.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'
import { startPrivateRedis } from '../rig.js'
import { rebuiltViews } from '../helpers/modelViews.js'
import { patient } from '../helpers/patience.js'

/** A model that answers every call with text and keeps what it was sent. */
function echoModel(seen: ModelMessage[][], words = 40) {
  return scriptedModel(
    Array.from({ length: 200 }, () => ({ messages }: { messages: ModelMessage[] }) => {
      seen.push(messages)
      const last = String(messages.at(-1)?.content ?? '')
      return { text: `answer to ${last.slice(0, 30)} ${'words '.repeat(words)}` }
    }),
  )
}

async function runTurns(host: HarnessHost, harness: Harness, sessionId: string, texts: string[]) {
  const session = host.open(harness, { sessionId })
  for (const text of texts) {
    const { inputId } = await session.prompt(text)
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
  }
  return session
}

describe('session.reset', () => {
  const hosts = useInProcessHosts()

  it('R21: the next model call sees only the note and its own input; the transcript keeps every turn; the reset is recorded with its principal and a fresh host rebuilds the same views (no compaction option needed)', async () => {
    const seen: ModelMessage[][] = []
    const harness = defineHarness({ name: 'resetting', adapter: echoModel(seen), systemPrompts: ['be brief'] })
    const { host } = hosts.start(harness, 'reset-plain')
    const session = await runTurns(host, harness, 'r1', ['first', 'second', 'third'])
    expect(
      seen
        .at(-1)!
        .filter((m) => m.role === 'user')
        .map((m) => m.content),
    ).toEqual(['first', 'second', 'third'])
    const done = await session.reset('The user is Ada; she wants the invoice re-sent.', { principal: 'ops@acme' })
    expect(done).toMatchObject({ entryId: expect.any(String), tokens: { before: expect.any(Number), after: expect.any(Number) } })
    expect(done.tokens.after).toBeLessThan(done.tokens.before)
    await runTurns(host, harness, 'r1', ['fourth'])
    expect(seen.at(-1)).toEqual([
      { role: 'user', content: 'The user is Ada; she wants the invoice re-sent.' },
      { role: 'user', content: 'fourth' },
    ])
    // the turns after the reset see it and each other
    await runTurns(host, harness, 'r1', ['fifth'])
    expect(seen.at(-1)!.map((m) => m.content)).toEqual([
      'The user is Ada; she wants the invoice re-sent.',
      'fourth',
      expect.stringMatching(/^answer to fourth/),
      'fifth',
    ])
    // R21: the transcript keeps everything; the record names who reset
    const entries = await session.log.read()
    expect(records(entries, 'harness.input')).toHaveLength(5)
    expect(records(entries, 'harness.compaction')).toEqual([
      expect.objectContaining({
        strategy: 'reset',
        reason: 'reset',
        principal: 'ops@acme',
        through: expect.objectContaining({ inputId: expect.any(String) }),
      }),
    ])
    expect(rebuiltViews(await session.log.conversation())).toEqual(seen)

    // without a note: the next call sees its own input only
    await session.reset()
    await runTurns(host, harness, 'r1', ['sixth'])
    expect(seen.at(-1)).toEqual([{ role: 'user', content: 'sixth' }])
    expect(rebuiltViews(await session.log.conversation())).toEqual(seen)

    // the timeline shows each reset, with who asked
    const timeline = new Timeline()
    const lines: string[] = []
    for await (const event of session.events({ follow: false })) lines.push(...timeline.push(event).map((item) => item.text))
    expect(lines.filter((l) => l.startsWith('reset'))).toEqual([
      expect.stringMatching(/^reset by ops@acme: the model's context starts over from the note: The user is Ada; .*; ~\d+ -> ~\d+ tokens$/),
      expect.stringMatching(/^reset: the model's context starts over; ~\d+ -> ~\d+ tokens$/),
    ])

    // bad notes are refused with what to do, nothing logged
    await expect(session.reset(42 as unknown as string)).rejects.toThrow(/note must be a string/)
    await expect(session.reset('x'.repeat(2_000_000))).rejects.toMatchObject({ code: 'value_too_large' })
    expect(records(await session.log.read(), 'harness.compaction')).toHaveLength(2)
  })

  it('a reset builds on the compactions before it and later compactions build on it: the summary call reads the note as the summary before', async () => {
    const seen: ModelMessage[][] = []
    const summaries: string[] = []
    const harness = defineHarness({
      name: 'resetCompacting',
      adapter: echoModel(seen, 80),
      compaction: {
        maxTokens: 700,
        strategy: summarizeOldest({
          keepRecentTokens: 250,
          summarize: ({ transcript }) => {
            summaries.push(transcript)
            return `SUMMARY ${summaries.length}`
          },
        }),
      },
    })
    const { host } = hosts.start(harness, 'reset-compact')
    const session = await runTurns(host, harness, 'r2', ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8'])
    expect(records(await session.log.read(), 'harness.compaction').length).toBeGreaterThanOrEqual(1)
    await session.reset('NOTE')
    await runTurns(host, harness, 'r2', ['b1'])
    expect(seen.at(-1)!.map((m) => m.content)).toEqual(['NOTE', 'b1'])
    const before = summaries.length
    await runTurns(host, harness, 'r2', ['b2', 'b3', 'b4', 'b5', 'b6', 'b7', 'b8', 'b9'])
    expect(summaries.length).toBeGreaterThan(before)
    expect(summaries[before]).toMatch(/^Summary of the conversation before:\nNOTE\n/)
    for (const messages of seen.slice(-5)) expect(messages.some((m) => m.content === 'a1')).toBe(false)
    const compactions = records(await session.log.read(), 'harness.compaction')
    const ids = (await session.log.read({ types: ['harness.compaction'] })).map((e) => e.id)
    expect(compactions.map((c) => c.base)).toEqual([undefined, ...ids.slice(0, -1)])
    expect(rebuiltViews(await session.log.conversation())).toEqual(seen)
  })

  it('over HTTP: POST control { op: "reset", note } resets with the caller as principal; a note of the wrong type is a 400', async () => {
    const seen: ModelMessage[][] = []
    const harness = defineHarness({ name: 'resetHttp', adapter: echoModel(seen) })
    const { host } = hosts.start(harness, 'reset-http')
    const session = await runTurns(host, harness, 'h1', ['one', 'two'])
    const handler = createHarnessHandler({ host, harness, authorize: () => ({ id: 'ops@http' }) })
    const control = (body: object) =>
      handler(
        new Request('http://dh.test/api/control', {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        }),
      )
    const receipt = await (await control({ op: 'reset', threadId: 'h1', note: 'start over' })).json()
    expect(receipt).toMatchObject({ op: 'reset', threadId: 'h1', status: 'reset', entryId: expect.any(String) })
    expect(records(await session.log.read(), 'harness.compaction')).toEqual([
      expect.objectContaining({ strategy: 'reset', principal: 'ops@http', summary: 'start over' }),
    ])
    const bad = await control({ op: 'reset', threadId: 'h1', note: 7 })
    expect(bad.status).toBe(400)
    expect(await (await control({ op: 'reset', threadId: 'nobody' })).json()).toMatchObject({ error: expect.any(String) })
    await runTurns(host, harness, 'h1', ['three'])
    expect(seen.at(-1)!.map((m) => m.content)).toEqual(['start over', 'three'])
  })

  it('R21: Redis SIGKILLed and restarted from its AOF after a reset: the record and the read pointer survive, the next turn sees the note', async () => {
    const server = await startPrivateRedis()
    hosts.defer(() => server.stop())
    const seen: ModelMessage[][] = []
    const harness = defineHarness({
      name: 'resetAof',
      adapter: echoModel(seen),
      compaction: { maxTokens: 100_000 },
    })
    const { host } = hosts.start(harness, 'reset-aof', { redis: server.url })
    const session = await runTurns(host, harness, 'aof', ['x1', 'x2', 'x3'])
    await session.reset('kept across the restart')
    const before = await session.log.read({ types: ['harness.compaction'] })
    await server.kill()
    await server.restart()
    expect(await session.log.read({ types: ['harness.compaction'] })).toEqual(before)
    await runTurns(host, harness, 'aof', ['after'])
    expect(seen.at(-1)!.map((m) => m.content)).toEqual(['kept across the restart', 'after'])
    expect(rebuiltViews(await session.log.conversation())).toEqual(seen)
  })
})
