// `npx tsx scripts/bench/limits.ts [--quick] [--rounds N]`: the cost of a limit that is not reached
// (issue 26, docs/limits.md). A 1-step durable tool through session.runTool, limited
// (`limits.tools.one = { concurrency: 10000 }`, never full) against the same tool unlimited, in the
// same process, on the same Redis, rounds interleaved so a change of machine load hits both: p50 of
// one call at a time, and calls/s with 20 concurrent callers. Target: limited ≤ 1.15× unlimited.
// Redis: REDIS_URL if set (only the bench's prefix is written, then deleted), else a private
// redis-server (no AOF, hz 100). Prints one table; figures are medians over the rounds.
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, type Harness, type HarnessHost } from '../../src/index.js'
import { scriptedModel, startRedisServer } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, pool, silentLogger, stderrProgress, summarize } from './lib.js'

const one = durableTool(
  toolDefinition({ name: 'one', description: 'One trivial step', inputSchema: z.object({}) }),
  async (_input, { step }) => {
    await step.do('a', async () => 1)
    return { ok: true }
  },
)
const adapter = scriptedModel([])
const limited = defineHarness({ name: 'bench-limited', adapter, tools: [one], limits: { tools: { one: { concurrency: 10_000 } } } })
const unlimited = defineHarness({ name: 'bench-unlimited', adapter, tools: [one] })

const median = (xs: number[]) => summarize(xs).p50

async function latency(host: HarnessHost, harness: Harness, label: string, n: number): Promise<number> {
  const samples: number[] = []
  const session = host.open(harness, { sessionId: `${label}` })
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await session.runTool({ name: 'one', input: {} })
    samples.push(performance.now() - t0)
  }
  return summarize(samples).p50
}

async function throughput(host: HarnessHost, harness: Harness, label: string, n: number): Promise<number> {
  const ms = await pool(n, 20, (i) => host.open(harness, { sessionId: `${label}-${i % 50}` }).runTool({ name: 'one', input: {} }))
  return (n / ms) * 1000
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  const at = process.argv.indexOf('--rounds')
  const rounds = at >= 0 ? Number(process.argv[at + 1]) : quick ? 2 : 5
  const server = process.env.REDIS_URL ? undefined : await startRedisServer({ appendonly: false, hz: 100 })
  const url = process.env.REDIS_URL ?? server!.url
  const prefix = benchPrefix('limits')
  const host = createHarnessHost({ redis: url, harnesses: [limited, unlimited], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 20, sweepEveryMs: 0 })
  const [latN, tputN] = quick ? [100, 400] : [300, 2000]
  const figures = {
    p50: { limited: [] as number[], unlimited: [] as number[] },
    perSec: { limited: [] as number[], unlimited: [] as number[] },
  }
  try {
    await host.ready()
    // warm-up: scripts loaded, connections open, JIT
    await latency(host, limited, 'warm-l', 50)
    await latency(host, unlimited, 'warm-u', 50)
    for (let r = 0; r < rounds; r++) {
      // alternate which goes first
      const order: Array<['limited' | 'unlimited', Harness]> =
        r % 2 === 0
          ? [
              ['limited', limited],
              ['unlimited', unlimited],
            ]
          : [
              ['unlimited', unlimited],
              ['limited', limited],
            ]
      for (const [name, harness] of order) figures.p50[name].push(await latency(host, harness, `lat-${name}-${r}`, latN))
      for (const [name, harness] of order) figures.perSec[name].push(await throughput(host, harness, `tput-${name}-${r}`, tputN))
      stderrProgress(
        `round ${r + 1}/${rounds}: p50 ${figures.p50.limited.at(-1)!.toFixed(2)} vs ${figures.p50.unlimited.at(-1)!.toFixed(2)} ms, ` +
          `${Math.round(figures.perSec.limited.at(-1)!)} vs ${Math.round(figures.perSec.unlimited.at(-1)!)} calls/s`,
      )
    }
  } finally {
    await workers.close()
    await host.close()
    await deletePrefix(url, prefix).catch(() => {})
    await server?.stop()
  }
  // the median of the rounds' own ratios: each pair ran back to back, under the same load
  const ratios = (xs: number[], ys: number[]) => median(xs.map((x, i) => x / ys[i]!))
  const rows = [
    [
      'limit not reached: runTool p50 (1 at a time)',
      figures.p50.limited,
      figures.p50.unlimited,
      ratios(figures.p50.limited, figures.p50.unlimited),
      'ms',
    ],
    [
      'limit not reached: calls/s (20 callers)',
      figures.perSec.limited,
      figures.perSec.unlimited,
      ratios(figures.perSec.unlimited, figures.perSec.limited),
      '/s',
    ],
  ] as const
  process.stdout.write(
    `| row | limited (median) | unlimited (median) | cost: median of the rounds' ratios | target |\n|---|---|---|---|---|\n`,
  )
  for (const [row, a, b, ratio, unit] of rows) {
    const show = (xs: readonly number[]) => `${unit === 'ms' ? median([...xs]).toFixed(2) : Math.round(median([...xs]))} ${unit}`
    process.stdout.write(`| ${row} | ${show(a)} | ${show(b)} | ${ratio.toFixed(2)}x | ≤ 1.15x ${ratio <= 1.15 ? 'met' : 'NOT met'} |\n`)
  }
  const list = (xs: number[], digits: number) => xs.map((x) => x.toFixed(digits)).join(', ')
  process.stdout.write(`\nrounds ${rounds}; p50 ms limited ${list(figures.p50.limited, 2)}; unlimited ${list(figures.p50.unlimited, 2)}\n`)
  process.stdout.write(`calls/s limited ${list(figures.perSec.limited, 0)}; unlimited ${list(figures.perSec.unlimited, 0)}\n`)
}

await main()
