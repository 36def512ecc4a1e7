// Inputs an adversarial model or caller can send, and failures of our own writes: each gets a clear,
// bounded outcome and the session keeps working. In-process hosts over real Redis (the OOM tests over
// a private redis-server whose memory limit they change).
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { Redis } from 'ioredis'

import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool, withTimeout } from '../../src/index.js'
import {
  InvalidCursorError,
  InvalidIdError,
  NotJsonError,
  StorageError,
  ToolCallConflictError,
  UnknownInputError,
  ValueTooLargeError,
} from '../../src/errors/index.js'
import { SessionLog } from '../../src/log/index.js'
import { scriptedModel, type ScriptEntry } from '../../src/testing/index.js'
import { records } from '../helpers/log.js'
import { startPrivateRedis } from '../rig.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { patient } from '../helpers/patience.js'

const hosts = useInProcessHosts()
const start = hosts.start
const defer = hosts.defer

const echo = durableTool(
  toolDefinition({ name: 'echo', description: 'echo', inputSchema: z.object({ text: z.string() }) }),
  async ({ text }, { step }) => step.do('echo', () => ({ echo: text })),
)

/** A model that answers every user message with one batch of `calls` (ids as given), then with a text of the results it read. */
function batchModel(
  calls: (turn: number) => Array<{ id: string; name: string; input: unknown }>,
  seen: ModelMessage[][] = [],
): ScriptEntry[] {
  return Array.from({ length: 40 }, () => ({ messages }) => {
    seen.push(messages)
    const turn = messages.filter((m) => m.role === 'user').length
    const lastUser = messages.map((m) => m.role).lastIndexOf('user')
    if (!messages.slice(lastUser).some((m) => m.role === 'assistant')) return { toolCalls: calls(turn) }
    return {
      text: messages
        .slice(lastUser)
        .filter((m) => m.role === 'tool')
        .map((m) => m.content)
        .join(' | '),
    }
  })
}

describe('ids the model controls', () => {
  it('a call id the model reuses in every response (call_0) runs a new call each turn; the model still reads its own id', async () => {
    const seen: ModelMessage[][] = []
    const harness = defineHarness({
      name: 'reuse',
      adapter: scriptedModel(batchModel((turn) => [{ id: 'call_0', name: 'echo', input: { text: `turn ${turn}` } }], seen)),
      tools: [echo],
    })
    const { host } = start(harness, 'reuse')
    const session = host.open(harness, { sessionId: 'reuse' })
    for (const turn of [1, 2, 3]) {
      const { inputId } = await session.prompt(`go ${turn}`)
      expect(await session.settled(inputId, { timeoutMs: patient(20_000) })).toEqual({
        outcome: 'completed',
        text: `{"echo":"turn ${turn}"}`,
      })
    }
    const calls = records(await session.log.read(), 'harness.model.response').flatMap((r) => r.toolCalls)
    // stored under three different ids, each remembering the model's own
    expect(new Set(calls.map((c) => c.toolCallId)).size).toBe(3)
    expect(calls[0]).toMatchObject({ toolCallId: 'call_0' })
    expect(calls.slice(1).every((c) => c.modelToolCallId === 'call_0' && c.toolCallId.startsWith('call_0~'))).toBe(true)
    // the model's last request shows all three calls and their results under its own id
    const last = seen.at(-1)!
    expect(last.filter((m) => m.role === 'tool').map((m) => [m.toolCallId, m.content])).toEqual(
      [1, 2, 3].map((t) => ['call_0', `{"echo":"turn ${t}"}`]),
    )
    expect(
      last
        .filter((m) => m.role === 'assistant')
        .flatMap((m) => m.toolCalls ?? [])
        .map((c) => c.id),
    ).toEqual(['call_0', 'call_0', 'call_0'])
  })

  it('the same call id twice in one response runs two calls', async () => {
    const harness = defineHarness({
      name: 'dup',
      adapter: scriptedModel(
        batchModel(() => [
          { id: 'same', name: 'echo', input: { text: 'a' } },
          { id: 'same', name: 'echo', input: { text: 'b' } },
        ]),
      ),
      tools: [echo],
    })
    const { host } = start(harness, 'dup')
    const session = host.open(harness, { sessionId: 'dup' })
    const { inputId } = await session.prompt('go')
    expect(await session.settled(inputId, { timeoutMs: patient(20_000) })).toEqual({
      outcome: 'completed',
      text: '{"echo":"a"} | {"echo":"b"}',
    })
  })

  it('ids with \\0, \\n and | are stored under safe ids: no call overwrites another, no listener throws, the session goes on', async () => {
    const ids = ['x', 'x\0result', 'line\nbreak', 'a|b', '']
    const harness = defineHarness({
      name: 'ctrl',
      adapter: scriptedModel(batchModel(() => ids.map((id, i) => ({ id, name: 'echo', input: { text: `t${i}` } })))),
      tools: [echo],
    })
    const { host } = start(harness, 'ctrl')
    const session = host.open(harness, { sessionId: 'ctrl' })
    const { inputId } = await session.prompt('go')
    expect(await session.settled(inputId, { timeoutMs: patient(20_000) })).toEqual({
      outcome: 'completed',
      text: ids.map((_, i) => `{"echo":"t${i}"}`).join(' | '),
    })
    const calls = records(await session.log.read(), 'harness.model.response')[0]!.toolCalls
    expect(calls.map((c: { modelToolCallId?: string; toolCallId: string }) => c.modelToolCallId ?? c.toolCallId)).toEqual(ids)
    for (const c of calls) expect(c.toolCallId).toMatch(/^[A-Za-z0-9._~-]+$/)
    // the session keeps working
    const next = await session.prompt('again')
    expect((await session.settled(next.inputId, { timeoutMs: patient(20_000) })).outcome).toBe('completed')
  })

  it("a model's call id shaped as a fan-out child's (<parent>.<name>) is stored under a hashed id: the child it names still runs as the parent's child", async () => {
    const fanner = durableTool(
      toolDefinition({ name: 'fanner', description: 'one child', inputSchema: z.object({}) }),
      async (_input, { tools }) => tools.run(echo, { text: 'child' }, { name: 'c0' }),
    )
    const harness = defineHarness({
      name: 'dotted',
      adapter: scriptedModel(
        batchModel(() => [
          { id: 'p', name: 'fanner', input: {} },
          { id: 'p.c0', name: 'echo', input: { text: 'model' } },
        ]),
      ),
      tools: [echo, fanner],
    })
    const { host } = start(harness, 'dotted')
    const session = host.open(harness, { sessionId: 'dotted' })
    const { inputId } = await session.prompt('go')
    expect(await session.settled(inputId, { timeoutMs: patient(20_000) })).toEqual({
      outcome: 'completed',
      text: '{"echo":"child"} | {"echo":"model"}',
    })
    const [, dotted] = records(await session.log.read(), 'harness.model.response')[0]!.toolCalls
    expect(dotted).toMatchObject({ modelToolCallId: 'p.c0', toolCallId: expect.stringMatching(/^h-[0-9a-f]{24}$/) })
  })

  it('a caller id with a control character is refused before anything is written (runTool, answer, settled)', async () => {
    const harness = defineHarness({ name: 'callerids', adapter: scriptedModel([]), tools: [echo] })
    const { host } = start(harness, 'callerids')
    const session = host.open(harness, { sessionId: 'ids' })
    await expect(session.runTool({ name: 'echo', input: { text: 'a' }, toolCallId: 'a\nb' })).rejects.toBeInstanceOf(InvalidIdError)
    await expect(session.runTool({ name: 'echo', input: { text: 'a' }, toolCallId: 'a\0result' })).rejects.toBeInstanceOf(InvalidIdError)
    await expect(session.answer('q-1\0answer', {})).rejects.toBeInstanceOf(InvalidIdError)
    await expect(session.settled('in\n1')).rejects.toBeInstanceOf(InvalidIdError)
    expect(await session.log.read()).toEqual([])
  })

  it('a turn whose batch finishes without a result makes no endless loop: it settles after maxAttempts', async () => {
    const harness = defineHarness({
      name: 'stuck',
      adapter: scriptedModel(batchModel(() => [{ id: 'c1', name: 'echo', input: { text: 'a' } }])),
      tools: [echo],
      durability: { maxAttempts: 2 },
    })
    const { host, prefix } = start(harness, 'stuck')
    const redis = new Redis(hosts.url())
    defer(async () => redis.disconnect())
    // a call state that says 'done' with no result in the log: its job completes at once without landing
    const log = new SessionLog(redis, prefix, 'stuck')
    await redis.hset(log.stream.keys.calls, 'c1', JSON.stringify({ s: 'done', e: 1, a: 1, r: 'safe', n: 'echo' }))
    const session = host.open(harness, { sessionId: 'stuck' })
    const { inputId } = await session.prompt('go')
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled).toMatchObject({
      outcome: 'failed',
      error: { code: 'attempts_exhausted', message: expect.stringContaining('made no progress') },
    })
    expect(records(await session.log.read(), 'harness.model.response')).toHaveLength(1)
  })
})

describe('errors inside steps and odd throws', () => {
  it('OOM while a step is stored, after its side effect ran: the write is retried, the side effect ran once and the result lands', async () => {
    const server = await startPrivateRedis({ appendonly: false })
    defer(() => server.stop())
    const admin = new Redis(server.url)
    defer(async () => admin.disconnect())
    let charges = 0
    const charge = durableTool(
      toolDefinition({ name: 'charge', description: 'charge', inputSchema: z.object({}) }),
      async (_input, { step }) => {
        const payment = await step.do('charge', async () => {
          charges++
          // Redis runs out of memory right after the side effect; memory returns a moment later
          await admin.config('SET', 'maxmemory-policy', 'noeviction')
          await admin.config('SET', 'maxmemory', '1')
          setTimeout(() => void admin.config('SET', 'maxmemory', '0'), 1_500)
          return { id: 'ch_1' }
        })
        return payment
      },
    )
    const harness = defineHarness({ name: 'oom', adapter: scriptedModel([]), tools: [charge] })
    const { host } = start(harness, 'oom', { redis: server.url, writeRetryMs: 30_000 })
    const session = host.open(harness, { sessionId: 'oom' })
    expect(await session.runTool({ name: 'charge', input: {} }, { timeoutMs: patient(30_000) })).toEqual({ id: 'ch_1' })
    expect(charges).toBe(1)
    expect(records(await session.log.read(), 'harness.tool.step')).toHaveLength(1)
  })

  it('OOM for longer than the write retries: the job fails and the call runs again as a cut, never landing the OOM as a tool error', async () => {
    const server = await startPrivateRedis({ appendonly: false })
    defer(() => server.stop())
    const admin = new Redis(server.url)
    defer(async () => admin.disconnect())
    const keys: string[] = []
    const charge = durableTool(
      toolDefinition({ name: 'charge', description: 'charge', inputSchema: z.object({}) }),
      async (_input, { step }) => {
        try {
          return await step.do('charge', async ({ idempotencyKey }) => {
            keys.push(idempotencyKey)
            if (keys.length === 1) {
              await admin.config('SET', 'maxmemory-policy', 'noeviction')
              await admin.config('SET', 'maxmemory', '1')
              setTimeout(() => void admin.config('SET', 'maxmemory', '0'), 2_000)
            }
            return { id: 'ch_1' }
          })
        } catch (error) {
          // a tool that swallows every error still cannot turn our failed write into its own result
          return { swallowed: String(error) }
        }
      },
    )
    const harness = defineHarness({
      name: 'oom2',
      adapter: scriptedModel([]),
      tools: [charge],
      durability: { lockMs: 1_000, stalledMs: 500 },
    })
    const { host } = start(harness, 'oom2', { redis: server.url, writeRetryMs: 200 })
    const session = host.open(harness, { sessionId: 'oom2' })
    expect(await session.runTool({ name: 'charge', input: {} }, { timeoutMs: patient(45_000) })).toEqual({ id: 'ch_1' })
    const log = await session.log.read()
    expect(records(log, 'harness.tool.result')).toEqual([expect.objectContaining({ result: { id: 'ch_1' } })])
    // every attempt while Redis had no memory failed its job (no tool error) and the next one began as a rerun
    const reasons = records(log, 'harness.tool.started').map((r) => r.reason)
    expect(reasons[0]).toBe('fresh')
    expect(reasons.length).toBeGreaterThanOrEqual(2)
    expect(reasons.slice(1).every((r) => r === 'rerun')).toBe(true)
    // the rerun passed the same idempotency key to the side effect: a provider that honours it charges once
    expect(new Set(keys).size).toBe(1)
  })

  it('odd throws (null-prototype object, Symbol, throwing Proxy, throwing message getter) each land one tool error, once', async () => {
    const throwers: Record<string, () => unknown> = {
      nullProto: () => Object.create(null),
      symbol: () => Symbol('odd'),
      proxy: () =>
        new Proxy(
          {},
          {
            get() {
              throw new Error('trap')
            },
            getPrototypeOf() {
              throw new Error('trap')
            },
          },
        ),
      getter: () => {
        const error = new Error('x')
        Object.defineProperty(error, 'message', {
          get() {
            throw new Error('getter')
          },
        })
        return error
      },
    }
    const odd = durableTool(
      toolDefinition({ name: 'odd', description: 'throws oddly', inputSchema: z.object({ kind: z.string() }) }),
      async ({ kind }) => {
        throw throwers[kind]!()
      },
    )
    const harness = defineHarness({ name: 'odd', adapter: scriptedModel([]), tools: [odd] })
    const { host } = start(harness, 'odd')
    const session = host.open(harness, { sessionId: 'odd' })
    for (const kind of Object.keys(throwers)) {
      await expect(session.runTool({ name: 'odd', input: { kind }, toolCallId: `odd-${kind}` })).rejects.toMatchObject({
        name: 'ToolCallError',
      })
    }
    const log = await session.log.read()
    expect(records(log, 'harness.tool.started').map((r) => r.reason)).toEqual(Object.keys(throwers).map(() => 'fresh'))
    expect(records(log, 'harness.tool.result').map((r) => typeof r.error?.message)).toEqual(Object.keys(throwers).map(() => 'string'))
    expect(records(log, 'harness.tool.result').find((r) => r.toolCallId === 'odd-symbol')?.error?.message).toBe('Symbol(odd)')
    // nothing is left for the sweeper to run again
    expect(await host.sweep({ graceMs: 0 })).toEqual([])
  })
})

describe('calls that must end', () => {
  it('tool timeout: a tool that never resolves lands a timeout error, its signal fires, its slot is freed and a late step is refused', async () => {
    let signalled = false
    let lateRan = false
    const hang = durableTool(
      toolDefinition({ name: 'hang', description: 'never resolves', inputSchema: z.object({}) }),
      async (_input, { step, abortSignal }) => {
        abortSignal?.addEventListener('abort', () => (signalled = true))
        await new Promise((resolve) => setTimeout(resolve, 1_500)) // ignores its signal
        await step.do('late', () => {
          lateRan = true
          return 1
        })
        return 'late result'
      },
      { timeoutMs: 300 },
    )
    const quick = withTimeout(
      toolDefinition({ name: 'quick', description: 'quick', inputSchema: z.object({}) }).server(async () => 'quick'),
      5_000,
    )
    const harness = defineHarness({ name: 'timeouts', adapter: scriptedModel([]), tools: [hang, quick] })
    // one slot: the quick call can run only once the hanging one has let go of it
    const { host } = start(harness, 'timeouts', { concurrency: 1 })
    const session = host.open(harness, { sessionId: 'timeouts' })
    await expect(session.runTool({ name: 'hang', input: {} })).rejects.toMatchObject({
      code: 'timeout',
      message: expect.stringContaining('300 ms'),
    })
    expect(signalled).toBe(true)
    expect(await session.runTool({ name: 'quick', input: {} })).toBe('quick')
    await new Promise((resolve) => setTimeout(resolve, 1_800))
    expect(lateRan).toBe(false)
    const log = await session.log.read()
    expect(records(log, 'harness.tool.step')).toEqual([])
    expect(records(log, 'harness.tool.result').map((r) => r.error?.code ?? r.result)).toEqual(['timeout', 'quick'])
  })

  it('settled() of an input that was never given rejects with UnknownInputError at once', async () => {
    const harness = defineHarness({ name: 'unknown', adapter: scriptedModel([]), tools: [echo] })
    const { host } = start(harness, 'unknown')
    await expect(host.open(harness, { sessionId: 'u' }).settled('never-given')).rejects.toBeInstanceOf(UnknownInputError)
  })
})

describe('silent acceptance', () => {
  it('runTool with a toolCallId already used for another tool or another input is refused; the same call again returns its result once', async () => {
    let runs = 0
    const counted = durableTool(
      toolDefinition({ name: 'counted', description: 'c', inputSchema: z.object({ n: z.number() }) }),
      async ({ n }) => {
        runs++
        return n
      },
    )
    const harness = defineHarness({ name: 'conflict', adapter: scriptedModel([]), tools: [echo, counted] })
    const { host } = start(harness, 'conflict')
    const session = host.open(harness, { sessionId: 'c' })
    expect(await session.runTool({ name: 'counted', input: { n: 1 }, toolCallId: 'pay-1' })).toBe(1)
    expect(await session.runTool({ name: 'counted', input: { n: 1 }, toolCallId: 'pay-1' })).toBe(1)
    expect(runs).toBe(1)
    await expect(session.runTool({ name: 'counted', input: { n: 2 }, toolCallId: 'pay-1' })).rejects.toBeInstanceOf(ToolCallConflictError)
    await expect(session.runTool({ name: 'echo', input: { text: 'x' }, toolCallId: 'pay-1' })).rejects.toBeInstanceOf(ToolCallConflictError)
    expect(records(await session.log.read(), 'harness.tool.requested')).toHaveLength(1)
  })

  it('a sparse array in a runTool input is stored as JSON does (holes are null) and the caller gets the result', async () => {
    const harness = defineHarness({
      name: 'sparse',
      adapter: scriptedModel([]),
      tools: [
        durableTool(
          toolDefinition({ name: 'items', description: 'i', inputSchema: z.object({ items: z.array(z.number().nullable()) }) }),
          async ({ items }) => items,
        ),
      ],
    })
    const { host } = start(harness, 'sparse')
    const session = host.open(harness, { sessionId: 'sparse' })
    // eslint-disable-next-line no-sparse-arrays
    expect(await session.runTool({ name: 'items', input: { items: [1, , 3] } })).toEqual([1, null, 3])
  })

  it('a runTool input that is not JSON is refused before anything is written or enqueued', async () => {
    const harness = defineHarness({ name: 'notjson', adapter: scriptedModel([]), tools: [echo] })
    const { host } = start(harness, 'notjson')
    const session = host.open(harness, { sessionId: 'nj' })
    await expect(session.runTool({ name: 'echo', input: { text: 'a', at: new Date() } })).rejects.toBeInstanceOf(NotJsonError)
    expect(await session.log.read()).toEqual([])
  })

  it('__proto__ keys: a step value keeps an own __proto__ key as data, the same on the first run and on replay', async () => {
    const values: unknown[] = []
    let crash = true
    const proto = durableTool(toolDefinition({ name: 'proto', description: 'p', inputSchema: z.object({}) }), async (_input, { step }) => {
      const value = await step.do('v', () => JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as { a: number })
      values.push(value)
      if (crash) {
        crash = false
        throw new Error('first attempt ends here') // lands a tool error; replayed below through a second call of the same steps
      }
      return value
    })
    const harness = defineHarness({ name: 'proto', adapter: scriptedModel([]), tools: [proto] })
    const { host, prefix } = start(harness, 'proto')
    const session = host.open(harness, { sessionId: 'p' })
    await expect(session.runTool({ name: 'proto', input: {}, toolCallId: 'p1' })).rejects.toMatchObject({ name: 'ToolCallError' })
    // replay the stored step: the same call id begins again as a rerun and reads the step back
    const redis = new Redis(hosts.url())
    defer(async () => redis.disconnect())
    const log = new SessionLog(redis, prefix, 'p')
    const replayed = await log.calls.getStep('p1', 'v')
    values.push(replayed.found ? replayed.value : undefined)
    for (const value of values) {
      expect(Object.keys(value as object)).toEqual(['__proto__', 'a'])
      expect(Object.getPrototypeOf(value)).toBe(Object.prototype)
      expect(({} as { polluted?: boolean }).polluted).toBeUndefined()
    }
    expect(JSON.stringify(values[0])).toBe(JSON.stringify(values[1]))
  })
})

describe('sizes', () => {
  const big = 'x'.repeat(2_000)
  const limited = (tools: Parameters<typeof defineHarness>[0]['tools'], adapter = scriptedModel([])) =>
    defineHarness({ name: 'sizes', adapter, tools: tools ?? [], durability: { maxValueBytes: 1_000 } })

  it('an oversize prompt is refused with ValueTooLargeError and nothing is logged', async () => {
    const harness = limited([echo])
    const { host } = start(harness, 'bigprompt')
    const session = host.open(harness, { sessionId: 'b' })
    await expect(session.prompt(big)).rejects.toBeInstanceOf(ValueTooLargeError)
    expect(await session.log.read()).toEqual([])
  })

  it('an oversize runTool input is refused before anything is written; an oversize result lands as a value_too_large tool error', async () => {
    const harness = limited([echo])
    const { host } = start(harness, 'bigresult')
    const session = host.open(harness, { sessionId: 'b' })
    await expect(session.runTool({ name: 'echo', input: { text: big } })).rejects.toBeInstanceOf(ValueTooLargeError)
    expect(await session.log.read()).toEqual([])
    const blow = limited([durableTool(toolDefinition({ name: 'blow', description: 'b', inputSchema: z.object({}) }), async () => big)])
    const other = start(blow, 'bigresult2')
    await expect(other.host.open(blow, { sessionId: 'b' }).runTool({ name: 'blow', input: {} })).rejects.toMatchObject({
      code: 'value_too_large',
    })
  })

  it('an oversize tool input from the model is not kept: the call gets a value_too_large tool error and the turn completes', async () => {
    const harness = limited([echo], scriptedModel(batchModel(() => [{ id: 'c', name: 'echo', input: { text: big } }])))
    const { host } = start(harness, 'bigmodelinput')
    const session = host.open(harness, { sessionId: 'b' })
    const { inputId } = await session.prompt('go')
    expect(await session.settled(inputId, { timeoutMs: patient(20_000) })).toMatchObject({
      outcome: 'completed',
      text: expect.stringContaining('over the limit'),
    })
    const log = await session.log.read()
    expect(JSON.stringify(log)).not.toContain(big)
    expect(records(log, 'harness.tool.result')[0]).toMatchObject({ error: { code: 'value_too_large' } })
  })
})

describe('errors of ours are ours', () => {
  it('log.read with a garbage cursor throws InvalidCursorError, not a Redis ReplyError', async () => {
    const harness = defineHarness({ name: 'cursor', adapter: scriptedModel([]), tools: [echo] })
    const { host } = start(harness, 'cursor')
    const session = host.open(harness, { sessionId: 'c' })
    await expect(session.log.read({ after: 'garbage' })).rejects.toBeInstanceOf(InvalidCursorError)
    await expect(session.log.read({ before: '1-2-3' })).rejects.toBeInstanceOf(InvalidCursorError)
  })

  it('log.read and log.follow with a 20-digit id past 2^64-1 throw InvalidCursorError at the check, not a Redis error later', async () => {
    const harness = defineHarness({ name: 'cursor64', adapter: scriptedModel([]), tools: [echo] })
    const { host } = start(harness, 'cursor64')
    const session = host.open(harness, { sessionId: 'c' })
    await expect(session.log.read({ after: '99999999999999999999-0' })).rejects.toBeInstanceOf(InvalidCursorError)
    await expect(session.log.read({ from: '1-99999999999999999999' })).rejects.toBeInstanceOf(InvalidCursorError)
    const follow = session.log.follow({ after: '18446744073709551616' })[Symbol.asyncIterator]()
    await expect(follow.next()).rejects.toBeInstanceOf(InvalidCursorError)
    // the largest id Redis takes is still a cursor
    await expect(session.log.read({ after: '18446744073709551615-18446744073709551615' })).resolves.toEqual([])
  })

  it('an OOM at prompt surfaces as StorageError with the Redis error attached as its cause', async () => {
    const server = await startPrivateRedis({ appendonly: false })
    defer(() => server.stop())
    const admin = new Redis(server.url)
    defer(async () => admin.disconnect())
    const harness = defineHarness({ name: 'oomprompt', adapter: scriptedModel([]), tools: [echo] })
    const { host } = start(harness, 'oomprompt', { redis: server.url })
    const session = host.open(harness, { sessionId: 'o' })
    await admin.config('SET', 'maxmemory-policy', 'noeviction')
    await admin.config('SET', 'maxmemory', '1')
    const error = await session.prompt('hello').catch((e: unknown) => e)
    await admin.config('SET', 'maxmemory', '0')
    expect(error).toBeInstanceOf(StorageError)
    expect(String((error as StorageError).cause)).toMatch(/OOM/)
    // the session keeps working once Redis has memory again
    expect(await session.prompt('hello')).toHaveProperty('inputId')
  })
})
