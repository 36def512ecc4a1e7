// Spend (issue 55, docs/spend.md), rows 12a and 12b: what budgets cost a model call. A turn of one
// model call (scriptedModel reporting usage, priced), prompt -> settled, one at a time, on the same
// host and Redis: with a session and a principal budget (each call reserves in both, then settles)
// against the same harness without budgets (the usage totals and the try's mark are in both), in
// interleaved blocks; and the client commands of each turn (MONITOR).
import type { AnyTextAdapter } from '@tanstack/ai'
import { createHarnessHost, defineHarness, type Harness, type HarnessHost } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, pause, profileCommands, silentLogger, summarize, type Progress } from './lib.js'

/** A model that answers in 20 ms: faster than any hosted provider's first token. */
const PROVIDER_MS = 20

const usage = { promptTokens: 1_000, completionTokens: 100, totalTokens: 1_100 }
const pricing = { 'bench-model': { inputPerMTok: 1, outputPerMTok: 4 } }
const answer = () => ({ text: 'done', usage })
const budgets = { session: { maxCost: 1_000_000 }, principal: { maxCost: 1_000_000, per: '1d' } }

/** The scripted model, answering after `delayMs` (0: at once, the harness's own cost alone). */
function model(delayMs: number): AnyTextAdapter {
  const inner = scriptedModel([answer], { model: 'bench-model' })
  if (delayMs === 0) return inner
  return Object.assign(Object.create(inner) as AnyTextAdapter, {
    async *chatStream(options: Parameters<AnyTextAdapter['chatStream']>[0]) {
      await pause(delayMs)
      yield* inner.chatStream(options)
    },
  })
}
const harnesses = (delayMs: number) => ({
  plain: defineHarness({ name: `bench-spend-${delayMs}`, adapter: model(delayMs), tools: [], pricing }),
  budgeted: defineHarness({ name: `bench-spend-budgets-${delayMs}`, adapter: model(delayMs), tools: [], pricing, budgets }),
})
const instant = harnesses(0)
const provider = harnesses(PROVIDER_MS)

export interface SpendResult {
  /** p50 ms of a one-call turn without budgets and with a session and a principal budget: a model answering at once, and in 20 ms. */
  plainMs: number
  budgetedMs: number
  plainProviderMs: number
  budgetedProviderMs: number
  turns: number
  /** Client commands a turn sends, without and with the budgets. */
  plainCommands: number
  budgetedCommands: number
}

let sessions = 0
async function turn(host: HarnessHost, harness: Harness): Promise<void> {
  const session = host.open(harness, { sessionId: `spend-${++sessions}` })
  const { inputId } = await session.prompt('go', { principal: 'bench-user' })
  const settled = await session.settled(inputId, { timeoutMs: 30_000 })
  if (settled.outcome !== 'completed') throw new Error(`spend bench: settled ${JSON.stringify(settled)}`)
}

export async function measureSpend(url: string, options: { quick: boolean; progress: Progress }): Promise<SpendResult> {
  const prefix = benchPrefix('spend')
  const all = [instant.plain, instant.budgeted, provider.plain, provider.budgeted]
  const host = createHarnessHost({ redis: url, harnesses: all, prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 10, sweepEveryMs: 0 })
  const blocks = options.quick ? 4 : 12
  const perBlock = 25
  const times = new Map<Harness, number[]>(all.map((h) => [h, []]))
  try {
    await host.ready()
    for (let i = 0; i < 40; i++) await turn(host, all[i % all.length]!)
    for (let b = 0; b < blocks; b++) {
      // alternate which side goes first, so drift in the machine's load falls on both
      for (const pair of [instant, provider]) {
        for (const harness of b % 2 ? [pair.budgeted, pair.plain] : [pair.plain, pair.budgeted]) {
          for (let i = 0; i < perBlock; i++) {
            const t0 = performance.now()
            await turn(host, harness)
            times.get(harness)!.push(performance.now() - t0)
          }
        }
      }
      options.progress(`[bench] spend block ${b + 1}/${blocks}`)
    }
    const plainProfile = await profileCommands(url, prefix, 10, () => turn(host, instant.plain))
    const budgetedProfile = await profileCommands(url, prefix, 10, () => turn(host, instant.budgeted))
    const p50 = (harness: Harness) => summarize(times.get(harness)!).p50
    return {
      plainMs: p50(instant.plain),
      budgetedMs: p50(instant.budgeted),
      plainProviderMs: p50(provider.plain),
      budgetedProviderMs: p50(provider.budgeted),
      turns: blocks * perBlock,
      plainCommands: plainProfile.commandsPerOp,
      budgetedCommands: budgetedProfile.commandsPerOp,
    }
  } finally {
    await workers.close()
    await host.close()
    await deletePrefix(url, prefix)
  }
}
