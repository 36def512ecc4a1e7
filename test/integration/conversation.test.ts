import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { CONVERSATION_TYPES, conversationOf, hasType, SessionLog } from '../../src/log/index.js'
import { shop } from '../fixtures/shop.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { batch } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

// The conversation projection (src/log/commands/includes/conversation.lua) is what a turn reads
// instead of the whole log. The log stays the source of truth: these tests hold the two side by side.
describe('conversation projection', () => {
  const ctx = useWorkerProcesses({ label: 'conversation', workers: 2 })

  /** The ids of the log's conversation records, read from the log itself. */
  const fromLog = async (log: SessionLog) => conversationOf(await log.stream.read({ types: CONVERSATION_TYPES })).map((e) => e.id)
  /** The ids the projection holds, after its header. */
  const projected = async (log: SessionLog) => {
    const ids = await ctx.redis.lrange(log.stream.keys.conversation, 0, -1)
    expect(ids[0]).toBe('^')
    return ids.slice(1)
  }

  it('agrees with the log after workers are SIGKILLed mid-turn, and rebuilt from the log it is the same', async () => {
    const redis = new Redis(ctx.url)
    try {
      const sessions = ['conv-a', 'conv-b']
      const turns = sessions.map(async (sessionId, s) => {
        const session = ctx.host.open(shop, { sessionId })
        // a runTool call first: its result is in the log, not in the conversation (no model response asked for it)
        await session.runTool({ name: 'checkout', input: { orderId: `${sessionId}-r` } })
        for (let t = 0; t < 3; t++) {
          const { inputId } = await session.prompt(
            batch([
              // conv-a's pause between its two steps is the window the kill below must hit: 800 ms was
              // missed on a loaded 2-core run (the call had landed, no rerun), 3 s is not
              { name: 'checkout', input: { orderId: `${sessionId}-${t}`, pauseMs: s === 0 ? 3_000 : 300 } },
              { name: 'notify', input: { to: `${sessionId}-${t}`, pauseMs: 200 } },
            ]),
          )
          const settled = await session.settled(inputId, { timeoutMs: patient(60_000) })
          expect(settled.outcome).toBe('completed')
        }
      })
      // kill the worker of a checkout call of conv-a while it waits between its two steps, in two turns
      const charged = new Set<string>()
      const follower = new AbortController()
      for await (const { record } of ctx.host
        .open(shop, { sessionId: 'conv-a' })
        .log.follow({ types: ['harness.tool.step'], signal: follower.signal })) {
        if (!hasType(record, 'harness.tool.step') || !record.name.startsWith('charge:') || charged.has(record.toolCallId)) continue
        charged.add(record.toolCallId)
        if (charged.size === 1) continue // the runTool call: no pause
        const runner = await Promise.race(
          ctx.workers.map((w) =>
            w.waitFor((l) => l.sessionId === 'conv-a' && l.toolCallId === record.toolCallId && l.msg === 'tool call started').then(() => w),
          ),
        )
        await runner.kill('SIGKILL')
        ctx.workers.splice(ctx.workers.indexOf(runner), 1)
        ctx.workers.push(await ctx.spawn())
        if (charged.size === 3) follower.abort()
      }
      await Promise.all(turns)
      // the kills cut the two checkout calls: each ran again (a notify call the killed worker also ran may be cut too)
      const started = await new SessionLog(redis, ctx.prefix, 'conv-a').stream.read({ types: ['harness.tool.started'] })
      const reruns = started.filter((e) => hasType(e.record, 'harness.tool.started') && e.record.reason === 'rerun')
      expect(reruns.filter((e) => hasType(e.record, 'harness.tool.started') && e.record.name === 'checkout').length).toBe(2)
      for (const sessionId of sessions) {
        const log = new SessionLog(redis, ctx.prefix, sessionId)
        const logIds = await fromLog(log)
        expect(logIds.length).toBe(3 * 6) // per turn: input, 2 responses, 2 results, settle
        // the runTool call's result is in the log, not in the conversation (no model asked for it)
        expect((await log.stream.read({ types: ['harness.tool.result'] })).length).toBe(1 + 3 * 2)
        expect(await projected(log)).toEqual(logIds)
        expect((await log.inputs.conversation()).map((e) => e.id)).toEqual(logIds)
        // rebuilt from the log: the same
        await redis.del(log.stream.keys.conversation)
        expect((await log.inputs.conversation()).map((e) => e.id)).toEqual(logIds)
        expect(await projected(log)).toEqual(logIds)
      }
    } finally {
      redis.disconnect()
    }
  })

  it('a projection started on a log that already held entries is filled in from the log once, with nothing twice', async () => {
    const redis = new Redis(ctx.url)
    try {
      const log = new SessionLog(redis, ctx.prefix, 'conv-older')
      // entries written before the projection existed (as a version without it wrote them)
      await redis.xadd(log.stream.keys.log, '*', 'r', JSON.stringify({ type: 'app.note', n: 1 }))
      await redis.xadd(log.stream.keys.log, '*', 'r', JSON.stringify({ type: 'harness.input', inputId: 'old', text: 'hi', at: 1 }))
      await redis.xadd(
        log.stream.keys.log,
        '*',
        'r',
        JSON.stringify({ type: 'harness.input.settled', inputId: 'old', outcome: 'completed' }),
      )
      expect((await log.inputs.addInput('new', 'again')).status).toBe('added')
      const head = await redis.lindex(log.stream.keys.conversation, 0)
      expect(head).toMatch(/^\^\d+-\d+$/)
      const conversation = await log.inputs.conversation()
      expect(conversation.map((e) => e.record.type)).toEqual(['harness.input', 'harness.input.settled', 'harness.input'])
      expect(await projected(log)).toEqual(await fromLog(log))
      expect(await log.inputs.conversation()).toEqual(conversation)
    } finally {
      redis.disconnect()
    }
  })
})
