// session.events over real Redis: model text streams to followers on another host while the model
// writes it, every event reaches a follower once and in order across reconnects, tools' custom events
// arrive, and a model call cut mid-stream is marked before its retry.
import { toolDefinition, type StreamChunk } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, type Session, type SessionEvent } from '../../src/index.js'
import { UnknownInputError } from '../../src/errors/index.js'
import { SessionLog } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { LONG_TEXT, streaming } from '../fixtures/streaming.js'
import { quiet, useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { rigClient, uniquePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const hosts = useInProcessHosts()
const TEXT = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ') + '. ' + 'x'.repeat(600)

const progress = durableTool(
  toolDefinition({ name: 'progress', description: 'reports progress', inputSchema: z.object({}) }),
  async (_input, { step, emitCustomEvent }) => {
    emitCustomEvent?.('progress', { done: 1, of: 2 })
    await step.do('work', () => ({ ok: true }))
    emitCustomEvent?.('progress', { done: 2, of: 2 })
    return 'worked'
  },
)

/** A model that calls `progress` once, then writes TEXT in pieces of 20 characters, 5 ms apart. */
const harness = defineHarness({
  name: 'events',
  adapter: scriptedModel([{ toolCalls: [{ name: 'progress', input: {} }] }, { text: TEXT }], { stream: { chars: 20, delayMs: 5 } }),
  tools: [progress],
})

/** Collects a session's events until `stop` holds for one of them. */
async function collect(session: Session, stop: (e: StreamChunk) => boolean, from?: string): Promise<Array<SessionEvent & { at: number }>> {
  const out: Array<SessionEvent & { at: number }> = []
  const controller = new AbortController()
  for await (const e of session.events({ ...(from ? { from } : {}), signal: controller.signal, blockMs: 200 })) {
    out.push({ ...e, at: Date.now() })
    if (stop(e.event)) controller.abort()
  }
  return out
}

const textOf = (events: SessionEvent[]) =>
  events
    .map((e) => e.event)
    .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
    .map((e) => (e as { delta: string }).delta)
    .join('')

describe('session.events', () => {
  it('streams the model text to a follower on another host while the model writes it, in more than one delta, each character once', async () => {
    const { host, prefix, url } = hosts.start(harness, 'events-live')
    // the follower's host runs no workers: it only reads
    const other = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: quiet })
    hosts.defer(() => other.close())
    const follower = collect(other.open(harness, { sessionId: 'live' }), (e) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR')
    const { inputId } = await host.open(harness, { sessionId: 'live' }).prompt('go')
    const events = await follower
    const types = events.map((e) => e.event.type)
    expect(types[0]).toBe('RUN_STARTED')
    expect(types.at(-1)).toBe('RUN_FINISHED')
    expect(types).toEqual(
      expect.arrayContaining([
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
        'TOOL_CALL_RESULT',
        'TEXT_MESSAGE_START',
        'TEXT_MESSAGE_END',
      ]),
    )
    const contents = events.filter((e) => e.event.type === 'TEXT_MESSAGE_CONTENT')
    expect(contents.length).toBeGreaterThan(1)
    expect(textOf(events)).toBe(TEXT)
    // the first piece reached the follower before the turn's response was logged
    const log = await host.open(harness, { sessionId: 'live' }).log.read({ types: ['harness.model.response'] })
    const responseLoggedAt = Number(log.at(-1)!.id.split('-')[0])
    expect(contents[0]!.at).toBeLessThanOrEqual(responseLoggedAt)
    // the turn's own run id and the tool's custom events
    expect(events[0]!.event).toMatchObject({ threadId: 'live', runId: inputId })
    expect(
      events
        .filter((e) => e.event.type === 'CUSTOM' && (e.event as { name: string }).name === 'progress')
        .map((e) => (e.event as { value: unknown }).value),
    ).toEqual([
      { done: 1, of: 2 },
      { done: 2, of: 2 },
    ])
  })

  it('a follower that comes back with any cursor gets every later event exactly once, in order', async () => {
    const { host } = hosts.start(harness, 'events-resume')
    const session = host.open(harness, { sessionId: 'resume' })
    const { inputId } = await session.prompt('go')
    await session.settled(inputId, { timeoutMs: patient(20_000) })
    const all: SessionEvent[] = []
    for await (const e of session.events({ follow: false })) all.push(e)
    expect(all.length).toBeGreaterThan(10)
    for (let i = 0; i < all.length; i++) {
      const rest: SessionEvent[] = []
      for await (const e of session.events({ from: all[i]!.cursor, follow: false })) rest.push(e)
      expect(
        rest.map((e) => e.event),
        `resumed after event ${i} (${all[i]!.event.type})`,
      ).toEqual(all.slice(i + 1).map((e) => e.event))
    }
  })

  it('events({ fromInput }) starts at that turn: the second turn of a session gives the same events as the slice of the whole, and an unknown input throws', async () => {
    const twice = defineHarness({
      name: 'events-twice',
      adapter: scriptedModel(
        [
          { toolCalls: [{ name: 'progress', input: {} }] },
          { text: 'one' },
          { toolCalls: [{ name: 'progress', input: {} }] },
          { text: 'two' },
        ],
        {
          stream: { chars: 2, delayMs: 1 },
        },
      ),
      tools: [progress],
    })
    const { host } = hosts.start(twice, 'events-from-input')
    const session = host.open(twice, { sessionId: 'two-turns' })
    for (const text of ['first', 'second']) {
      const { inputId } = await session.prompt(text, { inputId: text })
      await session.settled(inputId, { timeoutMs: patient(20_000) })
    }
    const all: StreamChunk[] = []
    for await (const e of session.events({ follow: false })) all.push(e.event)
    const second: StreamChunk[] = []
    for await (const e of session.events({ fromInput: 'second', follow: false })) second.push(e.event)
    const start = all.findIndex((e) => e.type === 'RUN_STARTED' && e.runId === 'second')
    expect(start).toBeGreaterThan(0)
    expect(second).toEqual(all.slice(start))
    await expect(session.events({ fromInput: 'never', follow: false }).next()).rejects.toBeInstanceOf(UnknownInputError)
  })

  it("events({ fromInput }) leaves out an earlier turn's text deltas that the live stream holds around the input", async () => {
    const idle = defineHarness({ name: 'events-idle', adapter: scriptedModel([]) })
    const prefix = uniquePrefix('events-idle')
    const host = createHarnessHost({ redis: hosts.url(), harnesses: [idle], prefix, logger: quiet })
    hosts.defer(() => host.close())
    const redis = rigClient(hosts.url())
    hosts.defer(() => redis.disconnect())
    const log = new SessionLog(redis, prefix, 'late')
    // no workers: the second input's turn does not run. A delta of the first turn right before and right after it
    await log.stream.appendLive({ k: 'delta', m: 'first.0.x', inputId: 'first', at: 0, text: 'old ' })
    await host.open(idle, { sessionId: 'late' }).prompt('second', { inputId: 'second' })
    await log.stream.appendLive({ k: 'delta', m: 'first.0.x', inputId: 'first', at: 4, text: 'text' })
    await log.stream.appendLive({ k: 'delta', m: 'second.0.y', inputId: 'second', at: 0, text: 'new' })
    const events: StreamChunk[] = []
    for await (const e of host.open(idle, { sessionId: 'late' }).events({ fromInput: 'second', follow: false })) events.push(e.event)
    expect(events.map((e) => e.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT'])
    expect(events[3]).toMatchObject({ messageId: 'second.0.y', delta: 'new' })
  })

  it('when the live deltas have expired, a follower gets the message whole from the log', async () => {
    const { host, url } = hosts.start(harness, 'events-expired')
    const session = host.open(harness, { sessionId: 'expired' })
    const { inputId } = await session.prompt('go')
    await session.settled(inputId, { timeoutMs: patient(20_000) })
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    await redis.del(new SessionLog(redis, host.prefix, 'expired').stream.keys.live)
    const events: SessionEvent[] = []
    for await (const e of session.events({ follow: false })) events.push(e)
    expect(events.filter((e) => e.event.type === 'TEXT_MESSAGE_CONTENT')).toHaveLength(1)
    expect(textOf(events)).toBe(TEXT)
  })

  it('a model call cut mid-stream: its message is closed after a harness.model.retry marker, and the retry streams whole', async () => {
    const { host, url } = hosts.start(harness, 'events-retry')
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    // what a worker that died mid-stream leaves: deltas of a message whose response was never logged,
    // then the retried call's response under another message id (its deltas expired here)
    const log = new SessionLog(redis, host.prefix, 'retry')
    await log.inputs.addInput('in-1', 'go', harness.name)
    await log.stream.appendLive({ k: 'delta', m: 'in-1.0.dead', inputId: 'in-1', at: 0, text: 'half a sent' })
    await log.inputs.logModelResponse('in-1', { text: TEXT, messageId: 'in-1.0.live', toolCalls: [] }, 0)
    const events: StreamChunk[] = []
    for await (const e of host.open(harness, { sessionId: 'retry' }).events({ follow: false })) events.push(e.event)
    const types = events.map((e) => (e.type === 'CUSTOM' ? `CUSTOM:${(e as { name: string }).name}` : e.type))
    expect(types).toEqual([
      'RUN_STARTED',
      'CUSTOM:harness.input',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'CUSTOM:harness.model.retry',
      'TEXT_MESSAGE_END',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
    ])
    expect(events[5]).toMatchObject({ messageId: 'in-1.0.dead' })
    expect(events[7]).toMatchObject({ messageId: 'in-1.0.live', delta: TEXT })
  })

  it('a cursor that is not one of ours is refused with InvalidCursorError', async () => {
    const { host } = hosts.start(harness, 'events-cursor')
    const iterator = host.open(harness, { sessionId: 'c' }).events({ from: 'garbage', follow: false })
    await expect(iterator.next()).rejects.toMatchObject({ code: 'invalid_cursor' })
  })
})

describe('session.events over worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'events-crash', harnesses: [streaming], module: 'test/fixtures/streaming.ts', workers: 1 })

  it('a worker SIGKILLed while the model streams: the follower sees a harness.model.retry marker, then the retried call whole, once', async () => {
    const session = ctx.host.open(streaming, { sessionId: 'crash' })
    const events: StreamChunk[] = []
    let killed = false
    const controller = new AbortController()
    const { inputId } = await session.prompt('go')
    for await (const { event } of session.events({ signal: controller.signal, blockMs: 200 })) {
      events.push(event)
      // kill the only worker once a few pieces are out, and start another that picks the turn up
      if (!killed && events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').length >= 2) {
        killed = true
        await ctx.workers.splice(0)[0]!.kill('SIGKILL')
        ctx.workers.push(await ctx.spawn())
      }
      if (event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR') controller.abort()
    }
    expect(killed).toBe(true)
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', runId: inputId })
    const retry = events.findIndex((e) => e.type === 'CUSTOM' && (e as { name: string }).name === 'harness.model.retry')
    expect(retry).toBeGreaterThan(0)
    // after the marker: the cut message ends, and the retried call's message carries the whole text once
    const after = events.slice(retry + 1)
    expect(after[0]).toMatchObject({ type: 'TEXT_MESSAGE_END' })
    const starts = after.filter((e) => e.type === 'TEXT_MESSAGE_START')
    expect(starts).toHaveLength(1)
    const messageId = (starts[0] as { messageId: string }).messageId
    const text = after
      .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT' && (e as { messageId: string }).messageId === messageId)
      .map((e) => (e as { delta: string }).delta)
      .join('')
    expect(text).toBe(LONG_TEXT)
  })
})
