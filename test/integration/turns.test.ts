// What a turn's model sees, and how a turn ends, over real worker processes (test/fixtures/turns.ts):
// aborted inputs never reach the model (R18), the conversation order after a failed or crashed model
// call, a steer during the final model call, a crash loop bounded by maxAttempts (R15), an abort that
// stops the model call in flight, and tools that middleware offers.
import { describe, expect, it } from 'vitest'
import { auditing, boss, choosing, harnesses, killer, queued, steered, swapping, wrapping } from '../fixtures/turns.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { patient } from '../helpers/patience.js'

const MODULE = 'test/fixtures/turns.ts'

const exited = (worker: WorkerProcess) =>
  new Promise<void>((resolve) => {
    if (worker.proc.exitCode !== null || worker.proc.signalCode !== null) resolve()
    else worker.proc.once('exit', () => resolve())
  })

describe('turns', () => {
  const ctx = useWorkerProcesses({ label: 'turns', harnesses, module: MODULE, workers: 1 })
  const key = (name: string) => ctx.redis.set(`${ctx.prefix}:${name}`, '1')
  /** The user texts of each model call of one test (its texts all start with `tag`), in call order. */
  const seen = async (tag: string) =>
    (await ctx.redis.lrange(`${ctx.prefix}:seen`, 0, -1))
      .map((raw) => JSON.parse(raw) as string[])
      .filter((users) => users.length > 0 && users.every((u) => u.startsWith(`${tag} `)))
  const started = (tag: string, calls = 1) => until(async () => (await seen(tag)).length >= calls, `model call ${calls} of ${tag}`)
  /** The newest worker process (a test that kills one spawns the next). */
  const live = () => ctx.workers.at(-1)!

  it('R18: a queued input aborted before its turn ran never reaches the model; a retried model call sees only the conversation before its turn', async () => {
    const s = ctx.host.open(queued, { sessionId: 'queued-abort' })
    await s.prompt('q1 failhold g1', { inputId: 'first' })
    await started('q1')
    await s.prompt('q1 second', { inputId: 'second' })
    expect(await s.abort('second')).toBe(true)
    await s.prompt('q1 third', { inputId: 'third' })
    await key('g1') // the first model call fails now; its retry runs while "second" is settled aborted
    expect(await s.settled('first', { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
    expect(await s.settled('third', { timeoutMs: patient(30_000) })).toEqual({
      outcome: 'completed',
      text: 'saw: q1 failhold g1 | q1 third',
    })
    expect(await s.settled('second')).toMatchObject({ outcome: 'aborted' })
    expect(await seen('q1')).toEqual([['q1 failhold g1'], ['q1 failhold g1'], ['q1 failhold g1', 'q1 third']])
  })

  it('R18: after a crash in its model call, a turn sees the conversation before its input, then its input; the next turn sees it, not an aborted input', async () => {
    const s = ctx.host.open(queued, { sessionId: 'crash-order' })
    await s.prompt('c2 crashhold g2', { inputId: 'first' })
    await started('c2')
    await s.prompt('c2 second', { inputId: 'second' })
    await s.prompt('c2 third', { inputId: 'third' })
    expect(await s.abort('third')).toBe(true)
    const dying = live()
    await key('g2') // the model call SIGKILLs its worker
    await exited(dying)
    ctx.workers.push(await ctx.spawn())
    expect(await s.settled('first', { timeoutMs: patient(30_000) })).toEqual({ outcome: 'completed', text: 'saw: c2 crashhold g2' })
    expect(await s.settled('second', { timeoutMs: patient(30_000) })).toEqual({
      outcome: 'completed',
      text: 'saw: c2 crashhold g2 | c2 second',
    })
    expect(await seen('c2')).toEqual([['c2 crashhold g2'], ['c2 crashhold g2'], ['c2 crashhold g2', 'c2 second']])
  })

  it("R18: with busy 'steer', an input aborted while it waits to join never reaches the model; the others join in order", async () => {
    const s = ctx.host.open(steered, { sessionId: 'steer-abort' })
    await s.prompt('j1 wait w1', { inputId: 'host' })
    await until(async () => (await ctx.redis.lrange(`${ctx.prefix}:waiting`, 0, -1)).includes('w1'), 'the wait tool to run')
    for (const name of ['a', 'b', 'c']) await s.prompt(`j1 ${name}`, { inputId: name })
    expect(await s.abort('b')).toBe(true)
    await key('w1')
    const answer = { outcome: 'completed', text: 'saw: j1 wait w1 | j1 a | j1 c' }
    expect(await s.settled('host', { timeoutMs: patient(30_000) })).toEqual(answer)
    expect(await s.settled('a')).toEqual(answer)
    expect(await s.settled('c')).toEqual(answer)
    expect(await s.settled('b')).toMatchObject({ outcome: 'aborted' })
    expect(await seen('j1')).toEqual([['j1 wait w1'], ['j1 wait w1', 'j1 a', 'j1 c']])
  })

  it("busy 'steer': an input that joins during the turn's final model call gets one more model call, which sees it after that answer", async () => {
    const s = ctx.host.open(steered, { sessionId: 'steer-late' })
    await s.prompt('l3 hold g3', { inputId: 'host' })
    await started('l3')
    await s.prompt('l3 late', { inputId: 'late' })
    await key('g3')
    const answer = { outcome: 'completed', text: 'saw: l3 hold g3 | l3 late' }
    expect(await s.settled('host', { timeoutMs: patient(30_000) })).toEqual(answer)
    expect(await s.settled('late')).toEqual(answer)
    expect(await seen('l3')).toEqual([['l3 hold g3'], ['l3 hold g3', 'l3 late']])
    // the second call read the first answer, then the late input last
    const responses = records(await s.log.read(), 'harness.model.response')
    expect(responses.map((r) => [r.text, r.joined])).toEqual([
      ['saw: l3 hold g3', []],
      ['saw: l3 hold g3 | l3 late', ['late']],
    ])
    expect((await ctx.redis.lrange(`${ctx.prefix}:tails`, 0, -1)).at(-1)).toBe('l3 late')
  })

  /** Lets `tag`'s kill input kill workers; respawns each, until the turn settles (at most `limit` crashes). */
  async function crashLoop(settled: Promise<unknown>, limit: number): Promise<number> {
    let crashes = 0
    let done = false
    void settled.finally(() => (done = true))
    while (!done && crashes <= limit) {
      const worker = live()
      await Promise.race([exited(worker), settled])
      if (done) break
      crashes++
      ctx.workers.push(await ctx.spawn())
    }
    return crashes
  }

  it('R15: maxAttempts bounds a crash loop: a turn whose input SIGKILLs its worker every time ends failed after maxAttempts crashes', async () => {
    const s = ctx.host.open(killer, { sessionId: 'poison' })
    await key('gate:k4')
    await s.prompt('k4 kill', { inputId: 'poison' })
    const settled = s.settled('poison', { timeoutMs: patient(120_000) })
    const crashes = await crashLoop(settled, 4)
    expect(crashes).toBe(2)
    const outcome = await settled
    expect(outcome).toMatchObject({ outcome: 'failed', error: { code: 'attempts_exhausted' } })
    expect(outcome.error?.message).toMatch(/stopped its worker 2 times/)
  })

  it("R15: maxAttempts bounds the crash loop of an agent tool's child turn: the child ends failed, the parent call gets its error", async () => {
    const s = ctx.host.open(boss, { sessionId: 'boss-poison' })
    const { inputId } = await s.prompt('b4 agent', { inputId: 'boss' })
    await live().waitFor((l) => l.sessionId === 'boss-poison' && l.msg === 'tool call parked')
    const settled = s.settled(inputId, { timeoutMs: patient(120_000) })
    await key('gate:b4')
    const crashes = await crashLoop(settled, 4)
    expect(crashes).toBe(2)
    expect(await settled).toMatchObject({ outcome: 'completed' })
    const [result] = records(await s.log.read(), 'harness.tool.result')
    expect(result?.error?.message).toMatch(/stopped its worker 2 times/)
  })

  it('session.abort stops the model call in flight: its abort signal fires in the worker process, which then shuts down gracefully', async () => {
    // this worker is the only one, so it runs the turn
    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    const worker = await spawnWorker({ redisUrl: ctx.url, prefix: ctx.prefix, module: MODULE, env: { SHUTDOWN_GRACE_MS: '60000' } })
    try {
      const s = ctx.host.open(queued, { sessionId: 'hang' })
      const { inputId } = await s.prompt('h5 hang')
      await started('h5')
      expect(await s.abort(inputId, 'the user left')).toBe(true)
      await until(
        async () => (await ctx.redis.lrange(`${ctx.prefix}:aborted`, 0, -1)).includes('h5 hang'),
        'the model call to see its abort',
      )
      await worker.kill('SIGTERM')
      expect(worker.proc.exitCode).toBe(0)
    } finally {
      await worker.kill('SIGKILL')
      ctx.workers.push(await ctx.spawn())
    }
  })

  it('a middleware onConfig that offers a tool the harness does not have fails the turn with MiddlewareToolError (code middleware_tool), before any model call', async () => {
    const s = ctx.host.open(swapping, { sessionId: 'swap' })
    const { inputId } = await s.prompt('m6 lookpay')
    const settled = await s.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled).toMatchObject({ outcome: 'failed', error: { code: 'middleware_tool' } })
    expect(settled.error?.message).toMatch(/Middleware "swaps-in-pay" onConfig offered the model tool "pay"/)
    expect(await seen('m6')).toEqual([])
  })

  it("a middleware onConfig that wraps each tool's execute is run: the tool worker binds the wrapper around the tool, as chat() does", async () => {
    const s = ctx.host.open(wrapping, { sessionId: 'wrap' })
    const { inputId } = await s.prompt('w6 lookpay')
    expect(await s.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
    // look through its wrapper (wrapped twice, as chat() wraps a non-idempotent onConfig at init and again before the model call)
    expect(records(await s.log.read(), 'harness.tool.result')[0]).toMatchObject({
      name: 'look',
      result: { wrapped: { wrapped: 'looked' } },
    })
  })

  it("a middleware onConfig that chooses among the harness's own tools (look first, then pay) runs each", async () => {
    const s = ctx.host.open(choosing, { sessionId: 'choose' })
    const { inputId } = await s.prompt('n6 lookpay')
    expect(await s.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
    expect(records(await s.log.read(), 'harness.tool.result').map((r) => r.result)).toEqual(['looked', 'paid'])
  })

  it("R9: records a middleware's onAfterToolCall appends with getLogRecords(ctx) land in the write of the call's result, after the tool's own", async () => {
    const s = ctx.host.open(auditing, { sessionId: 'audit' })
    const { inputId } = await s.prompt('a9 lookpay')
    expect(await s.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
    const landed = (await s.log.read())
      .map((e) => e.record as Record<string, unknown>)
      .filter((r) => String(r.type).startsWith('app.') || r.type === 'harness.tool.result')
      .map((r) =>
        r.type === 'app.audit' ? `audit:${String(r.tool)}` : r.type === 'harness.tool.result' ? `result:${String(r.result)}` : r.type,
      )
    expect(landed).toEqual(['audit:look', 'result:looked', 'app.receipt', 'audit:pay', 'result:paid'])
  })
})
