// Honest counting under crashes (docs/spend.md, R25): 100 turns of 5 model calls over 3 worker
// processes, SIGKILLs while requests are out and a provider outage the turns retry through. Every try
// the provider saw is counted exactly once: answered ones with the usage it reported (to the token and
// the nano-dollar), refused ones (503) as not billed, cut ones as estimates; none twice, by a rerun or a zombie.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { answerTicks as answer, budgeted, BUDGET_USAGE, CALL_USD, CALLS_A_TURN } from '../fixtures/budgets.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { startModelServer, type ModelServer } from '../helpers/openaiServer.js'

const MODULE = 'test/fixtures/budgets.ts'
const TURNS = 100

describe('spend under SIGKILLs and a provider outage', () => {
  const ctx = useWorkerProcesses({ label: 'spend-killed', harnesses: [budgeted], module: MODULE, workers: 0 })
  let server: ModelServer
  let faulted = 0
  let outage = 0
  const env = () => ({ OPENAI_BASE_URL: server.baseURL, BUDGET_USD: '1000' })
  beforeAll(async () => {
    // the 20 requests after the first kill meet an outage (503): the default policy retries them
    server = await startModelServer(answer, {
      delayMs: 300,
      fault: () => {
        if (outage === 0) return undefined
        outage--
        faulted++
        return { status: 503, body: { error: { message: 'The service is overloaded', type: 'server_error' } } }
      },
    })
    for (let i = 0; i < 3; i++) ctx.workers.push(await ctx.spawn({ concurrency: 8, env: env() }))
  })
  afterAll(() => server?.close())

  it('R25 every try the provider saw is counted once: answered ones as billed, refused ones not billed, cut ones estimated, none twice', async () => {
    const turns: Array<{ sessionId: string; inputId: string }> = []
    for (let i = 0; i < TURNS; i++) {
      const sessionId = `killed-${i}`
      const { inputId } = await ctx.host.open(budgeted, { sessionId }).prompt('work', { principal: `p${i % 3}` })
      turns.push({ sessionId, inputId })
    }
    // twice, every worker SIGKILLed while requests are out (each answer takes 300 ms), then replaced
    for (let kill = 0; kill < 2; kill++) {
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
      for (let i = 0; i < 3; i++) ctx.workers.push(await ctx.spawn({ concurrency: 8, env: env() }))
      if (kill === 0) outage = 20
    }
    const completed = async () => {
      let n = 0
      for (const { sessionId } of turns) {
        const settled = records(await ctx.host.open(budgeted, { sessionId }).log.read(), 'harness.input.settled')[0]
        if (settled?.outcome === 'completed') n++
      }
      return n
    }
    await until(async () => (await completed()) === TURNS, 'every turn completed', 120_000)
    expect(server.cut.length).toBeGreaterThan(0)
    expect(faulted).toBe(20)

    // each session's counted tries, from its log: responses and harness.usage records
    let reported = { calls: 0, tokens: 0 }
    let estimated = 0
    let refused = 0
    for (const { sessionId } of turns) {
      const entries = await ctx.host.open(budgeted, { sessionId }).log.read()
      for (const r of records(entries, 'harness.usage').filter((u) => u.reason === 'refused')) {
        refused++
        expect(r.usage).toMatchObject({ totalTokens: 0, cost: 0 })
      }
      const billed = records(entries, 'harness.usage').filter((u) => u.reason !== 'refused')
      const usages = [...records(entries, 'harness.model.response'), ...billed].map((r) => r.usage!)
      for (const usage of usages) {
        if (usage.estimated) estimated++
        else reported = { calls: reported.calls + 1, tokens: reported.tokens + usage.totalTokens }
      }
    }
    const answered = server.requests.length - server.cut.length - faulted
    // the outage's 503s: each counted once, as not billed, and as no call
    expect(refused).toBe(faulted)
    // every billed request is a counted try: none lost
    const counted = reported.calls + estimated
    expect(counted).toBeGreaterThanOrEqual(server.requests.length - faulted)
    // past them, only tries a kill stopped between their mark and their request reaching the server
    // (counted: the harness cannot tell them from sent ones), at most the turns in flight at the kills
    expect(counted - (server.requests.length - faulted)).toBeLessThanOrEqual(2 * 3 * 8)
    // the cut tries are the estimated ones (a try answered just as its worker died is one of them)
    expect(estimated).toBeGreaterThanOrEqual(server.cut.length)
    // an answered try is counted with what the provider reported, never twice
    expect(reported.calls).toBeLessThanOrEqual(answered)
    expect(reported.calls).toBeGreaterThanOrEqual(TURNS * CALLS_A_TURN)
    expect(reported.tokens).toBe(reported.calls * BUDGET_USAGE.total_tokens)
    // the O(1) totals say the same, across sessions and principals
    const usage = await ctx.host.usage({ harness: 'budgeted' })
    expect(usage.total.calls).toBe(counted)
    expect(usage.total.estimatedCalls).toBe(estimated)
    const estimatedTokens = usage.total.totalTokens - reported.tokens
    expect(estimatedTokens).toBeGreaterThan(0)
    // the one inexact part, reported: the tries a SIGKILL cut, which the provider billed as it saw them
    console.log(
      `spend under kills: ${server.requests.length} requests (${faulted} refused, ${server.cut.length} cut at the server); ` +
        `${reported.calls} counted as billed, ${estimated} estimated (${estimatedTokens} tokens)`,
    )
    // the answered tries' cost, to the nano-dollar: reported calls at $0.02 plus the estimates' priced tokens
    expect(usage.total.cost).toBeGreaterThanOrEqual(reported.calls * CALL_USD - 1e-9)
  }, 240_000)
})
