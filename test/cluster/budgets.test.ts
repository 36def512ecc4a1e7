// Budgets on a 3-master Cluster (R25, docs/spend.md): a principal's budget hash lives in the slot of the
// principal's name, apart from the sessions that spend it; reservations from two worker processes race
// there, and the paused turns resume once the budget is raised.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { answerTicks as answer, budgeted, CALL_USD, CALLS_A_TURN } from '../fixtures/budgets.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { startModelServer, type ModelServer } from '../helpers/openaiServer.js'

describe('budgets on a Cluster, two worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'cl-budgets', harnesses: [budgeted], module: 'test/fixtures/budgets.ts', workers: 0 })
  let server: ModelServer
  beforeAll(async () => {
    server = await startModelServer(answer)
    for (let i = 0; i < 2; i++)
      ctx.workers.push(await ctx.spawn({ concurrency: 4, env: { OPENAI_BASE_URL: server.baseURL, BUDGET_USD: '0.2' } }))
  })
  afterAll(() => server?.close())

  it('R25 a $0.20 principal budget across sessions in every shard: no call past it, the paused turns complete after the raise', async () => {
    const turns = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const sessionId = `cl-budget-${i}`
        const { inputId } = await ctx.host.open(budgeted, { sessionId }).prompt('work', { principal: 'carol' })
        return { sessionId, inputId }
      }),
    )
    const stopped = async () => {
      const stops = { completed: 0, paused: [] as typeof turns }
      for (const turn of turns) {
        const entries = await ctx.host.open(budgeted, { sessionId: turn.sessionId }).log.read()
        if (records(entries, 'harness.input.settled')[0]?.outcome === 'completed') stops.completed++
        else if (records(entries, 'harness.turn.paused').length > records(entries, 'harness.turn.resumed').length) stops.paused.push(turn)
      }
      return stops
    }
    await until(
      async () => {
        const stops = await stopped()
        return stops.completed + stops.paused.length === turns.length
      },
      'every turn completed or paused',
      90_000,
    )
    const { paused } = await stopped()
    expect(paused.length).toBeGreaterThan(0)
    // $0.02 a call under $0.20: the reservations cover each call, so at most 10 calls went out
    expect(server.requests.length * CALL_USD).toBeLessThanOrEqual(0.2 + 1e-9)
    expect((await ctx.host.usage({ principal: 'carol' })).total.calls).toBe(server.requests.length)

    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    for (let i = 0; i < 2; i++)
      ctx.workers.push(await ctx.spawn({ concurrency: 4, env: { OPENAI_BASE_URL: server.baseURL, BUDGET_USD: '5' } }))
    for (const turn of paused) expect(await ctx.host.open(budgeted, { sessionId: turn.sessionId }).resume(turn.inputId)).toBe(true)
    await until(async () => (await stopped()).completed === turns.length, 'every turn completed after the resume', 90_000)
    expect(server.requests.length).toBe(turns.length * CALLS_A_TURN)
  }, 240_000)
})
