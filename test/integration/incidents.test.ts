// Operating incidents over worker processes (issue 27): a provider outage fails 200 turns; after it,
// `harness replay --status failed --since …` reruns exactly those (not a turn that failed before),
// every checkout charges its card once (the charge steps were kept), and a second replay does
// nothing. Then a pause during a steady load: no call starts while paused, parked calls that wake
// meanwhile wait, resume drains everything, and no turn or call is lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { incident, napCounts, pauser } from '../fixtures/incidents.js'
import { runBin } from '../helpers/cli.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { startModelServer, type ChatRequest, type ModelReply } from '../helpers/openaiServer.js'
import { patient } from '../helpers/patience.js'

const MODULE = 'test/fixtures/incidents.ts'
const TURNS = Number(process.env.INCIDENT_TURNS ?? 200)
const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
const promptOf = (request: ChatRequest) => request.messages.filter((m) => m.role === 'user').at(-1)!.content!

/** A checkout of the order the prompt names; once its result follows, an answer. */
function answer(request: ChatRequest): ModelReply {
  const orderId = promptOf(request)
  if (!request.messages.some((m) => m.role === 'tool'))
    return { toolCalls: [{ id: `call_${orderId}`, name: 'checkout', arguments: [JSON.stringify({ orderId })] }], usage }
  return { text: [`checked out ${orderId}`], usage }
}

describe('a provider outage, then a bulk replay from the CLI', () => {
  const ctx = useWorkerProcesses({ label: 'incident', harnesses: [incident, pauser], module: MODULE, workers: 0 })
  let down = true
  let baseURL = ''
  let closeServer = async () => {}
  const cli = (...args: string[]) => runBin([...args, '--module', MODULE], { REDIS_URL: ctx.url, DH_PREFIX: ctx.prefix })

  beforeAll(async () => {
    // the outage: every model call that would answer after the checkout fails (a 503)
    const server = await startModelServer(answer, {
      fault: (request) =>
        down && request.messages.some((m) => m.role === 'tool')
          ? { status: 503, body: { error: { message: 'The server is overloaded.', type: 'server_error', code: null } } }
          : undefined,
    })
    baseURL = server.baseURL
    closeServer = () => server.close()
    for (let i = 0; i < 2; i++) ctx.workers.push(await ctx.spawn({ concurrency: 20, env: { OPENAI_BASE_URL: baseURL } }))
  })
  afterAll(() => closeServer())

  const charges = async () => {
    const billing = await ctx.redis.hgetall(`${ctx.prefix}:billing`)
    return Object.entries(billing).filter(([k]) => k.startsWith('charge|'))
  }

  it(`${TURNS} turns fail in the outage; harness replay --status failed --since reruns exactly those, each card charged once; again: nothing`, async () => {
    // a turn that failed before the incident window: the replay's --since leaves it failed
    const old = ctx.host.open(incident, { sessionId: 'before-window' })
    const { inputId: oldInput } = await old.prompt('order-old')
    expect(await old.settled(oldInput)).toMatchObject({ outcome: 'failed' })
    await new Promise((resolve) => setTimeout(resolve, 20)) // the window starts strictly after it failed
    const since = new Date().toISOString()

    const sessions = Array.from({ length: TURNS }, (_, i) => ctx.host.open(incident, { sessionId: `checkout-${i}` }))
    const inputs = await Promise.all(
      sessions.map((s, i) => s.prompt(`order-${i}`, { metadata: { incident: 'i-1' }, principal: 'shop-frontend' })),
    )
    const failed = await Promise.all(sessions.map((s, i) => s.settled(inputs[i]!.inputId, { timeoutMs: patient(180_000) })))
    expect(failed.every((f) => f.outcome === 'failed' && f.error?.code === 'model_error')).toBe(true)
    expect(await charges()).toHaveLength(TURNS + 1)

    // the index finds them: the first page of the window's failed turns, the tag filter too
    const page = await ctx.host.turns({ status: 'failed', since: Date.parse(since), limit: 10 })
    expect(page.items).toHaveLength(Math.min(10, TURNS))
    expect(page.items[0]).toMatchObject({
      status: 'failed',
      harness: 'incident',
      principal: 'shop-frontend',
      metadata: { incident: 'i-1' },
    })
    const listed = await cli('turns', '--status', 'failed', '--since', since, '--json', '--limit', '1000')
    expect(listed.code).toBe(0)
    expect(listed.stdout.trim().split('\n')).toHaveLength(TURNS)
    // --tool reads the turns whose model called the tool (the tool index)
    const byTool = await cli('turns', '--status', 'failed', '--tool', 'checkout', '--since', since, '--json', '--limit', '1000')
    expect(byTool.stdout.trim().split('\n')).toHaveLength(TURNS)
    expect(await cli('turns', '--tool', 'refund', '--json')).toMatchObject({ code: 0, stdout: '' })

    down = false

    const replayed = await cli('replay', '--status', 'failed', '--since', since, '--by', 'oncall@acme')
    expect(replayed.stderr).toContain(`… ${TURNS} of ${TURNS}`)
    expect(replayed).toMatchObject({ code: 0, stdout: `Reran ${TURNS} turns.\n` })
    const settled = await Promise.all(sessions.map((s, i) => s.settled(inputs[i]!.inputId, { timeoutMs: patient(180_000) })))

    expect(settled).toEqual(sessions.map((_, i) => ({ outcome: 'completed', text: `checked out order-${i}` })))

    // every card charged once: each checkout's result was kept, so no call ran again (R19)
    const charged = await charges()
    expect(charged).toHaveLength(TURNS + 1)
    expect(charged.every(([, n]) => n === '1')).toBe(true)
    for (const session of sessions.slice(0, 20)) {
      const log = await session.log.read()
      expect(records(log, 'harness.tool.started')).toHaveLength(1)
      expect(records(log, 'harness.turn.rerun')).toMatchObject([{ principal: 'oncall@acme' }])
    }
    // the turn that failed before the window is still failed; a second replay finds nothing
    expect((await old.settled(oldInput)).outcome).toBe('failed')
    expect(await cli('replay', '--status', 'failed', '--since', since)).toMatchObject({ code: 0, stdout: 'Reran 0 turns.\n' })
    expect((await ctx.host.turns({ status: 'failed', since: Date.parse(since) })).items).toEqual([])
    expect((await ctx.host.turns({ status: 'completed', harness: 'incident', limit: 1000 })).items).toHaveLength(TURNS)
  }, 600_000)

  it('pause during a steady load: no call starts while paused, woken naps wait, resume drains everything', async () => {
    const counts = async () => {
      const c = await ctx.redis.hgetall(napCounts(ctx.prefix))
      return { start: Number(c.start ?? 0), done: Number(c.done ?? 0) }
    }
    const sessions = Array.from({ length: 30 }, (_, i) => ctx.host.open(pauser, { sessionId: `steady-${i}` }))
    const inputs: string[] = []
    // a steady load: a prompt every few ms, each a call that naps 1 s (parks, then wakes)
    for (const session of sessions.slice(0, 15)) inputs.push((await session.prompt(JSON.stringify({ ms: 1_000 }))).inputId)
    await until(async () => (await counts()).start >= 5, 'some naps to start')
    await cli('pause', 'pauser').then((r) => expect(r).toMatchObject({ code: 0, stdout: 'Paused pauser.\n' }))
    expect(await ctx.host.paused('pauser')).toBe(true)
    // running work finishes: no job of the harness active, then nothing starts any more
    const queues = ctx.host.queues().filter((q) => q.harness === 'pauser')
    const active = async () => (await Promise.all(queues.map((q) => q.queue.getActiveCount()))).reduce((a, b) => a + b, 0)
    await until(async () => (await active()) === 0, 'running jobs to finish')
    const frozen = await counts()
    // more prompts while paused: their turns wait too
    for (const session of sessions.slice(15)) inputs.push((await session.prompt(JSON.stringify({ ms: 1_000 }))).inputId)
    // the naps parked before the pause wake (1 s) into the paused queues: waiting, not run
    const waiting = async () => (await Promise.all(queues.map((q) => q.queue.getJobCounts('wait')))).reduce((n, c) => n + (c.wait ?? 0), 0)
    await until(
      async () => (await ctx.redis.zcard(`${queues.find((q) => q.kind === 'tools')!.queue.keys.delayed}`)) === 0,
      'the parked naps to wake',
    )
    expect(await waiting()).toBeGreaterThanOrEqual(15)
    expect(await counts()).toEqual(frozen)
    expect(await active()).toBe(0)

    await cli('resume', 'pauser').then((r) => expect(r).toMatchObject({ code: 0, stdout: 'Resumed pauser.\n' }))
    const settled = await Promise.all(sessions.map((s, i) => s.settled(inputs[i]!, { timeoutMs: patient(120_000) })))
    expect(settled.every((s) => s.outcome === 'completed')).toBe(true)
    // nothing lost, nothing twice: each nap started twice (before its park, after its wake) and finished once
    expect(await counts()).toEqual({ start: 60, done: 30 })
  }, 300_000)
})
