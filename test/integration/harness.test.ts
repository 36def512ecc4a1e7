import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, retryTransientErrors, type Harness } from '../../src/index.js'
import { InputConflictError } from '../../src/errors/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { shop } from '../fixtures/shop.js'
import { quiet, useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { lockOfTool } from '../helpers/lockOf.js'
import { monitorCommands as watchCommands } from '../helpers/monitor.js'
import { batch, records, until } from '../helpers/log.js'
import { scanKeys, rigClient } from '../rig.js'
import { scriptShas } from '../../src/log/commands/index.js'
import { patient } from '../helpers/patience.js'

describe('harness with worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'harness' })

  it('runs the calls of a batch in parallel and gives the model their results in call order', async () => {
    const session = ctx.host.open(shop, { sessionId: 'parallel' })
    // call 0 is slow, call 1 fast: results land 1 then 0, but the model must read 0 then 1. The fast
    // one takes 1 s too, so a worker process slow to take its first job (a cold Cluster connection
    // on a loaded machine once took longer than an instant call) still starts call 0 before it ends
    const { inputId } = await session.prompt(
      batch([
        { name: 'safeLookup', input: { sku: 'slow', pauseMs: 3000 } },
        { name: 'lookup', input: { sku: 'fast', pauseMs: 1000 } },
      ]),
    )
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled).toEqual({ outcome: 'completed', text: 'done: {"sku":"slow","stock":5} | {"sku":"fast","stock":3}' })
    const entries = await session.log.read()
    const order = entries
      .map((e) => e.record as Record<string, unknown>)
      .filter((r) => r.type === 'harness.tool.started' || r.type === 'harness.tool.result')
    const firstResult = order.findIndex((r) => r.type === 'harness.tool.result')
    // both calls started before either finished: they ran at the same time
    expect(
      order
        .slice(0, firstResult)
        .map((r) => r.toolCallId)
        .sort(),
    ).toEqual(['c0-0', 'c0-1'])
    expect(records(entries, 'harness.tool.result').map((r) => r.toolCallId)).toEqual(['c0-1', 'c0-0'])
  })

  it('R10: a worker killed mid-tool: the durable tool runs again on another worker and each step ran once', async () => {
    ctx.workers.push(await ctx.spawn())
    const session = ctx.host.open(shop, { sessionId: 'killed' })
    const { inputId } = await session.prompt(batch([{ name: 'checkout', input: { orderId: 'k1', pauseMs: 4000 } }]))
    // any worker may take the call: kill the one that started it, once the charge step is stored
    const runner = await Promise.race(
      ctx.workers.map((w) => w.waitFor((l) => l.sessionId === 'killed' && l.msg === 'tool call started').then(() => w)),
    )
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    await runner.kill('SIGKILL')
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled.outcome).toBe('completed')
    expect(settled.text).toBe('done: {"chargeId":"ch_k1"}')
    const billing = await ctx.redis.hgetall(`${ctx.prefix}:billing`)
    expect(billing['charge|killed:c0-0:charge:k1']).toBe('1')
    expect(billing['invoice|killed:c0-0:invoice:ch_k1']).toBe('1')
    const started2 = records(await session.log.read(), 'harness.tool.started')
    expect(started2.map((r) => [r.attempt, r.reason])).toEqual([
      [1, 'fresh'],
      [2, 'rerun'],
    ])
  })

  it('a worker stopped with SIGTERM finishes its active call, then exits 0', async () => {
    // the only worker, so it is the one that takes the call
    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    const leaving = await ctx.spawn()
    ctx.workers.push(leaving)
    const session = ctx.host.open(shop, { sessionId: 'sigterm' })
    const run = session.runTool({ name: 'checkout', input: { orderId: 't1', pauseMs: 1500 }, toolCallId: 'term' })
    await leaving.waitFor((l) => l.toolCallId === 'term' && l.msg === 'tool call started')
    const exited = new Promise<number | null>((resolve) => leaving.proc.once('exit', (code) => resolve(code)))
    leaving.proc.kill('SIGTERM')
    expect(await exited).toBe(0)
    // the call landed before the process left: nothing was cut
    expect(await run).toEqual({ chargeId: 'ch_t1' })
    expect(records(await session.log.read(), 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh'])
    expect(leaving.lines.some((l) => l.msg === 'worker stopped')).toBe(true)
    ctx.workers.push(await ctx.spawn(), await ctx.spawn())
  })

  it('invalid tool input and an unknown tool name become tool errors while the turn completes', async () => {
    const session = ctx.host.open(shop, { sessionId: 'bad-input' })
    const { inputId } = await session.prompt(
      batch([
        { name: 'checkout', input: { orderId: 42 } },
        { name: 'teleport', input: {} },
      ]),
    )
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled.outcome).toBe('completed')
    const results = records(await session.log.read(), 'harness.tool.result')
    expect(results).toHaveLength(2)
    const [invalid, unknown] = results.sort((a, b) => String(a.toolCallId).localeCompare(String(b.toolCallId))) as Array<{
      error: { code: string; message: string }
    }>
    expect(invalid!.error.code).toBe('invalid_tool_input')
    expect(invalid!.error.message).toMatch(/checkout.*orderId/s)
    expect(unknown!.error.code).toBe('unknown_tool')
    expect(settled.text).toContain('Unknown tool')
    expect(await ctx.redis.hexists(`${ctx.prefix}:billing`, 'charge|bad-input:c0-0:charge:42')).toBe(0)
  })

  it('R15: the same inputId twice runs once; a different text under it is refused', async () => {
    const session = ctx.host.open(shop, { sessionId: 'once' })
    const text = batch([{ name: 'lookup', input: { sku: 'once' } }])
    const [a, b] = await Promise.all([session.prompt(text, { inputId: 'in-1' }), session.prompt(text, { inputId: 'in-1' })])
    expect(a.inputId).toBe('in-1')
    expect(b.inputId).toBe('in-1')
    await session.settled('in-1', { timeoutMs: patient(30_000) })
    await session.prompt(text, { inputId: 'in-1' })
    await expect(session.prompt('something else', { inputId: 'in-1' })).rejects.toBeInstanceOf(InputConflictError)
    const entries = await session.log.read()
    expect(records(entries, 'harness.input')).toHaveLength(1)
    expect(records(entries, 'harness.input.settled')).toHaveLength(1)
    expect(records(entries, 'harness.tool.result')).toHaveLength(1)
    expect(await ctx.redis.hget(`${ctx.prefix}:billing`, 'lookup|once')).toBe('1')
  })
})

describe('harness in process', () => {
  const hosts = useInProcessHosts()
  const start = (harness: Harness, label: string) => hosts.start(harness, label)
  const url = () => hosts.url()

  it('R12: the kept result is the one after every onAfterToolCall hook, without session secrets; a replacement wins, also on an error', async () => {
    const SECRET = 'sk_live_abcdef123456'
    const leaky = durableTool(
      toolDefinition({ name: 'leaky', description: 'returns a token', inputSchema: z.object({ fail: z.boolean() }) }),
      async ({ fail }, { secrets }) => {
        if (fail) throw new Error(`charge failed for key ${secrets.get('STRIPE_KEY')}`)
        return { token: secrets.get('STRIPE_KEY'), ok: true }
      },
    )
    const seen: unknown[] = []
    const harness = defineHarness({
      name: 'hooks',
      adapter: scriptedModel([
        {
          toolCalls: [
            { name: 'leaky', input: { fail: false } },
            { name: 'leaky', input: { fail: true } },
            { name: 'leaky', input: { fail: true } },
          ],
        },
        { text: 'ok' },
      ]),
      tools: [leaky],
      secrets: () => ({ STRIPE_KEY: SECRET }),
      hooks: {
        onAfterToolCall: [
          (info) => {
            seen.push(info.error ?? info.result)
            // replace the error of the second call only
            if (info.toolCallId === 'call-0-1') return { type: 'replaceResult', result: { replaced: true, was: info.error?.message } }
          },
          (info) => {
            seen.push(info.result ?? info.error)
          },
        ],
      },
    })
    const { host, prefix } = start(harness, 'r12')
    const session = host.open(harness, { sessionId: 'r12' })
    const { inputId } = await session.prompt('go')
    expect((await session.settled(inputId, { timeoutMs: patient(30_000) })).outcome).toBe('completed')
    const results = records(await session.log.read(), 'harness.tool.result')
    const byId = Object.fromEntries(results.map((r) => [r.toolCallId, r]))
    expect(byId['call-0-0']).toMatchObject({ result: { token: '[redacted]', ok: true } })
    expect(byId['call-0-1']).toMatchObject({ result: { replaced: true, was: 'charge failed for key [redacted]' } })
    expect(byId['call-0-1']).not.toHaveProperty('error')
    expect(byId['call-0-2']).toMatchObject({ error: { message: 'charge failed for key [redacted]' } })
    // the second hook saw the first hook's replacement
    expect(seen).toContainEqual({ replaced: true, was: `charge failed for key ${SECRET}` })
    // Redis holds no copy of the secret, in any key of this host
    const client = rigClient(url())
    try {
      for (const key of await scanKeys(url(), prefix)) {
        const type = await client.type(key)
        const dump =
          type === 'stream'
            ? JSON.stringify(await client.xrange(key, '-', '+'))
            : type === 'hash'
              ? JSON.stringify(await client.hgetall(key))
              : type === 'string'
                ? await client.get(key)
                : type === 'list'
                  ? JSON.stringify(await client.lrange(key, 0, -1))
                  : type === 'zset'
                    ? JSON.stringify(await client.zrange(key, '0', '-1'))
                    : ''
        expect(dump ?? '', key).not.toContain(SECRET)
      }
    } finally {
      client.disconnect()
    }
  })

  const monitorCommands = (prefix: string) => watchCommands(url(), prefix, (close) => hosts.defer(close))
  const shaOf = (script: string) => [...scriptShas()].find(([, name]) => name === script)![0]
  // a script's first use on a connection is an EVAL of its source, later ones EVALSHA
  const runs = (line: string, script: string, opening: string) =>
    line.startsWith(`"evalsha" "${shaOf(script)}"`) || (line.startsWith('"eval" ') && line.includes(opening))
  const ping = durableTool(toolDefinition({ name: 'ping', description: 'answers', inputSchema: z.object({}) }), async () => ({
    pong: true,
  }))

  // one Redis only: on a Cluster both are awaited in turn (a redirect could reorder them), and MONITOR sees one node
  const onCluster = (process.env.REDIS_URL ?? '').includes(',')
  // the local lane off (DH_LOCAL_LANE=off, the lane-off run of these suites): BullMQ's public path only
  const laneOff = process.env.DH_LOCAL_LANE === 'off'

  it.skipIf(onCluster)(
    'runTool sends its logged request and its job on one connection, the request first (in order, one round trip)',
    async () => {
      const harness = defineHarness({ name: 'pipelined', adapter: scriptedModel([]), tools: [ping] })
      const { prefix } = start(harness, 'pipelined')
      // a caller without lanes of its own (an API server): its call is added to the queue, not started
      // in its request's write (startCall.test.ts)
      const caller = createHarnessHost({ redis: url(), harnesses: [harness], prefix, logger: quiet })
      hosts.defer(() => caller.close())
      const sent = await monitorCommands(prefix)
      expect(await caller.open(harness, { sessionId: 'p1' }).runTool({ name: 'ping', input: {} })).toEqual({ pong: true })
      // the job's add is the script that names the queue's id counter (moveToActive does not)
      const isAdd = (c: { line: string }) => c.line.includes('tools.pipelined:id"')
      await until(async () => sent.some(isAdd), "the job's add on MONITOR")
      const request = sent.findIndex((c) => runs(c.line, 'requestCall', 'Logs a runTool request once'))
      const add = sent.findIndex(isAdd)
      expect(request).toBeGreaterThanOrEqual(0)
      expect(request).toBeLessThan(add)
      expect(sent[request]!.source).toBe(sent[add]!.source)
    },
  )

  it.skipIf(onCluster || laneOff)(
    "a runTool call of a host whose lane has a free slot starts in its request's write: its job runs under the lane's start token, with no add or fetch of its own",
    async () => {
      const locks: string[] = []
      const lockOf = lockOfTool(
        () => client,
        () => ({ prefix, harness: 'fetchedBehind', sessionId: 'f1' }),
        locks,
      )
      const harness = defineHarness({ name: 'fetchedBehind', adapter: scriptedModel([]), tools: [lockOf] })
      const { host, prefix } = start(harness, 'fetched-behind')
      const client = rigClient(url())
      hosts.defer(() => client.disconnect())
      const session = host.open(harness, { sessionId: 'f1' })
      // the first call may come before the queue's connection is ready (its add then waits for it)
      expect(await session.runTool({ name: 'lockOf', input: {} })).toEqual({ ok: true })
      locks.length = 0
      for (let i = 0; i < 3; i++) {
        // the lane's fetch after the call before found the queue empty: it waits for jobs again
        await new Promise((resolve) => setTimeout(resolve, 100))
        expect(await session.runTool({ name: 'lockOf', input: {} })).toEqual({ ok: true })
      }
      // the job's lock is the token of the slot its request's script started it on (startCall.lua,
      // EagerStartWorker.reserveStart), not of a fetch of the lane's
      expect(locks).toHaveLength(3)
      for (const lock of locks) expect(lock).toMatch(/:start\d+$/)
    },
  )

  it.skipIf(onCluster)(
    "a tool job's landing is sent on the worker's connection right before the job's completion (in order, one round trip)",
    async () => {
      const harness = defineHarness({ name: 'landing', adapter: scriptedModel([]), tools: [ping] })
      const { host, prefix } = start(harness, 'landing')
      const sent = await monitorCommands(prefix)
      expect(await host.open(harness, { sessionId: 'l1' }).runTool({ name: 'ping', input: {} })).toEqual({ pong: true })
      // BullMQ's moveToFinished is the script that stores the job's "returnvalue"
      const isCompletion = (c: { line: string }) => c.line.includes('"returnvalue"')
      await until(async () => sent.some(isCompletion), "the job's completion on MONITOR")
      const landing = sent.findIndex((c) => runs(c.line, 'landResult', "Lands a tool call's kept result"))
      const completion = sent.findIndex(isCompletion)
      expect(landing).toBeGreaterThanOrEqual(0)
      expect(landing).toBeLessThan(completion)
      expect(sent[landing]!.source).toBe(sent[completion]!.source)
    },
  )

  it.skipIf(onCluster)(
    "a new runTool call of a replay-safe tool is begun and started with its request: its worker sends no begin, a 1-step call's scripts are its start, its step and its landing",
    async () => {
      const once = durableTool(
        toolDefinition({ name: 'once', description: 'one step', inputSchema: z.object({}) }),
        async (_input, { step }) => {
          await step.do('a', async () => 1)
          return { ok: true }
        },
      )
      const harness = defineHarness({ name: 'twoScripts', adapter: scriptedModel([]), tools: [once] })
      const { host, prefix } = start(harness, 'two-scripts')
      const session = host.open(harness, { sessionId: 't1' })
      // scripts sent once as EVAL; the first call may come before the lanes fetch (it is added to the queue)
      for (let i = 0; i < 2; i++) expect(await session.runTool({ name: 'once', input: {} })).toEqual({ ok: true })
      const sent = await monitorCommands(prefix)
      expect(await session.runTool({ name: 'once', input: {} })).toEqual({ ok: true })
      await until(async () => sent.some((c) => runs(c.line, 'landResult', "Lands a tool call's kept result")), 'the landing on MONITOR')
      const ours = (['startCall', 'requestCall', 'beginCall', 'saveStep', 'landResult'] as const).map((script) => [
        script,
        sent.filter((c) => c.line.startsWith(`"evalsha" "${shaOf(script)}"`)).length,
      ])
      // the lane off: the request (begun) and BullMQ's add; the job's mark still saves its begin
      const requested = laneOff ? { startCall: 0, requestCall: 1 } : { startCall: 1, requestCall: 0 }
      expect(Object.fromEntries(ours)).toEqual({ ...requested, beginCall: 0, saveStep: 1, landResult: 1 })
      // neither BullMQ's add (addStandardJob: 9 keys, the wait list first) nor its fetch (moveToActive: 11) was sent
      if (!laneOff) expect(sent.filter((c) => /^"evalsha?" "[^"]+" "(9|11)" "[^"]*:wait"/.test(c.line))).toEqual([])
      const started = records(await session.log.read(), 'harness.tool.started')
      expect(started).toHaveLength(3)
      expect(started[2]).toMatchObject({ name: 'once', attempt: 1, replay: 'safe', reason: 'fresh' })
    },
  )

  it('a later turn sees the conversation before it: earlier inputs, answers and tool results', async () => {
    const seen: string[][] = []
    const harness = defineHarness({
      name: 'chatty',
      adapter: scriptedModel(
        Array.from({ length: 4 }, () => ({ messages }: { messages: Array<{ role: string; content: unknown }> }) => {
          seen.push(messages.map((m) => `${m.role}:${typeof m.content === 'string' ? m.content : ''}`))
          const last = messages.at(-1)!
          return last.role === 'user' && last.content === 'first'
            ? { toolCalls: [{ name: 'echo', input: { text: 'one' } }] }
            : { text: `answer ${seen.length}` }
        }),
      ),
      tools: [
        durableTool(
          toolDefinition({ name: 'echo', description: 'echo', inputSchema: z.object({ text: z.string() }) }),
          async ({ text }) => text,
        ),
      ],
    })
    const { host } = start(harness, 'history')
    const session = host.open(harness, { sessionId: 'history' })
    const first = await session.prompt('first')
    expect(await session.settled(first.inputId, { timeoutMs: patient(30_000) })).toEqual({ outcome: 'completed', text: 'answer 2' })
    const second = await session.prompt('second')
    expect(await session.settled(second.inputId, { timeoutMs: patient(30_000) })).toEqual({ outcome: 'completed', text: 'answer 3' })
    expect(seen[2]).toEqual(['user:first', 'assistant:', 'tool:one', 'assistant:answer 2', 'user:second'])
  })

  it('a secrets resolver that fails: in the worker the call gets the secrets_unavailable tool error; for a runTool or prompt it refuses them (SecretsUnavailableError, nothing logged)', async () => {
    let ran = 0
    let resolved = 0
    const needsKey = durableTool(
      toolDefinition({ name: 'needsKey', description: 'uses a key', inputSchema: z.object({}) }),
      async () => {
        ran++
        return 'ok'
      },
      { replay: 'never' },
    )
    const harness = defineHarness({
      name: 'vaultdown',
      adapter: scriptedModel([]),
      tools: [needsKey],
      // the caller's check of the input (the first resolve) passes, the worker's and every later one fails
      secrets: () => {
        if (resolved++ === 0) return {}
        throw new Error('vault unreachable: token sk_live_should_not_leak')
      },
    })
    const { host, prefix } = start(harness, 'vault')
    const session = host.open(harness, { sessionId: 'vault' })
    const error = await session.runTool({ name: 'needsKey', input: {} }).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'ToolCallError', code: 'secrets_unavailable' })
    expect(ran).toBe(0)
    const logged = await session.log.read()
    for (const refused of [session.runTool({ name: 'needsKey', input: {} }), session.prompt('hello')]) {
      const e = (await refused.catch((e: unknown) => e)) as Error
      expect(e).toMatchObject({ name: 'SecretsUnavailableError', code: 'secrets_unavailable' })
      expect(e.message).not.toContain('sk_live_should_not_leak')
    }
    expect(ran).toBe(0)
    expect(await session.log.read()).toEqual(logged)
    expect(JSON.stringify(logged)).not.toContain('sk_live_should_not_leak')
    expect((await scanKeys(url(), prefix)).length).toBeGreaterThan(0)
  })

  it('abort settles a turn as aborted at once; the model is not called again', async () => {
    let modelCalls = 0
    const napper = durableTool(
      toolDefinition({ name: 'napper', description: 'sleeps', inputSchema: z.object({}) }),
      async (_input, { step }) => {
        await step.sleep('nap', '1h')
        return 'rested'
      },
    )
    const harness = defineHarness({
      name: 'abortable',
      adapter: scriptedModel([
        () => (modelCalls++, { toolCalls: [{ name: 'napper', input: {} }] }),
        () => (modelCalls++, { text: 'never' }),
      ]),
      tools: [napper],
    })
    const { host } = start(harness, 'abort')
    const session = host.open(harness, { sessionId: 'abort' })
    const { inputId } = await session.prompt('go')
    await until(async () => records(await session.log.read(), 'harness.tool.suspended').length === 1, 'the call to park')
    expect(await session.abort(inputId, 'user left')).toBe(true)
    expect(await session.settled(inputId)).toEqual({ outcome: 'aborted', error: { code: 'aborted', message: 'user left' } })
    expect(await session.abort(inputId)).toBe(false)
    await expect(session.abort('no-such-input')).rejects.toMatchObject({ code: 'unknown_input' })
    expect(modelCalls).toBe(1)
  })

  it("abort fires ctx.abortSignal in the turn's running calls, in whatever process runs them", async () => {
    let sawAbort = ''
    const waiter = durableTool(
      toolDefinition({ name: 'waiter', description: 'waits until aborted', inputSchema: z.object({}) }),
      async (_input, { abortSignal }) => {
        await new Promise<void>((_resolve, reject) => {
          abortSignal?.addEventListener('abort', () => {
            sawAbort = String((abortSignal.reason as Error)?.message)
            reject(abortSignal.reason)
          })
        })
        return 'never'
      },
    )
    const harness = defineHarness({
      name: 'cancellable',
      adapter: scriptedModel([{ toolCalls: [{ name: 'waiter', input: {} }] }, { text: 'unused' }]),
      tools: [waiter],
    })
    const { host, prefix } = start(harness, 'abort-signal')
    const session = host.open(harness, { sessionId: 'cancel' })
    const { inputId } = await session.prompt('go')
    await until(async () => records(await session.log.read(), 'harness.tool.started').length === 1, 'the call to start')
    // aborted from another host: another process, as far as the workers can tell
    const other = createHarnessHost({ redis: url(), harnesses: [harness], prefix, logger: quiet })
    hosts.defer(() => other.close())
    expect(await other.open(harness, { sessionId: 'cancel' }).abort(inputId, 'user pressed stop')).toBe(true)
    await until(async () => records(await session.log.read(), 'harness.tool.result').length === 1, 'the aborted call to land')
    expect(sawAbort).toBe('user pressed stop')
    // the call ends with the turn, whether or not the tool heeds its signal
    expect(records(await session.log.read(), 'harness.tool.result')[0]).toMatchObject({
      error: { code: 'aborted', message: expect.stringContaining('user pressed stop') },
    })
  })

  it('R15: maxAttempts does not bound model errors: a transient one retries by turn.onModelError past maxAttempts, a permanent one fails at once with its message', async () => {
    let calls = 0
    const harness = defineHarness({
      name: 'flaky',
      adapter: scriptedModel([
        ({ messages }) => {
          calls++
          const prompt = String(messages.at(-1)?.content)
          if (prompt === 'permanent') throw new Error('model unavailable for this account')
          if (calls <= 4) throw new Error('503 The server is overloaded')
          return { text: 'back' }
        },
      ]),
      durability: { maxAttempts: 2 },
      turn: { onModelError: retryTransientErrors({ baseDelayMs: 10 }) },
    })
    const { host } = start(harness, 'r15-attempts')
    const session = host.open(harness, { sessionId: 'flaky' })
    const transient = await session.prompt('transient')
    expect(await session.settled(transient.inputId)).toEqual({ outcome: 'completed', text: 'back' })
    expect(calls).toBe(5)
    expect(records(await session.log.read(), 'harness.turn.retry').map((r) => r.attempt)).toEqual([1, 2, 3, 4])
    const other = host.open(harness, { sessionId: 'flaky-permanent' })
    const permanent = await other.prompt('permanent')
    expect(await other.settled(permanent.inputId)).toEqual({
      outcome: 'failed',
      error: { code: 'model_error', message: 'model unavailable for this account' },
    })
    expect(calls).toBe(6)
  })

  it('R15: a turn past timeoutMs settles as failed with timeout', async () => {
    const slow = durableTool(toolDefinition({ name: 'slow', description: 'takes a while', inputSchema: z.object({}) }), async () => {
      await new Promise((r) => setTimeout(r, 1500))
      return 'late'
    })
    const harness = defineHarness({
      name: 'slowpoke',
      adapter: scriptedModel([{ toolCalls: [{ name: 'slow', input: {} }] }, { text: 'never reached' }]),
      tools: [slow],
      durability: { timeoutMs: 700 },
    })
    const { host } = start(harness, 'r15-timeout')
    const session = host.open(harness, { sessionId: 'slow' })
    const { inputId } = await session.prompt('go')
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled).toMatchObject({ outcome: 'failed', error: { code: 'timeout' } })
    expect(records(await session.log.read(), 'harness.model.response')).toHaveLength(1)
  })
})
