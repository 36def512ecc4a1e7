// `npm run bench -- --against <ref> --interleave`: both libraries in ONE process, measured in short
// alternating blocks (this, ref; then ref, this; ...), each block pair a "round" of againstReport.
// Why: this machine's speed swings by 20-50% within tens of seconds (steal time). A round of the
// process-per-side mode takes about 30 s a side, so a swing often falls between its two halves; a
// block takes well under a second, so each pair sees nearly the same machine, and a few hundred
// pairs in a few minutes give a median ratio a few times tighter than nine rounds do.
// Rows: runTool-p50 (30 calls one at a time a block), runTool-20 and cpu-20 (300 calls, 20 callers),
// drain-50 and cpu-drain-50 (400 one-step calls enqueued, then drained by workers started at
// concurrency 50, timed from their start to the last completion, as againstSide's drain rows).
// Both hosts stay open for the whole run; the idle one's workers sit blocked in BZPOPMIN.
// `npx tsx scripts/bench/againstInterleaved.ts --this <lib> --ref <lib> --redis <url> --blocks N [--rows id,id] [--js]`
// Prints `AB-RESULT {"rounds":[...]}` on stdout; progress goes to stderr.
import { Redis } from 'ioredis'
import type * as Index from '../../src/index.js'
import type * as Testing from '../../src/testing/index.js'
import { enqueueOneStep, oneStepTool, sideImporter, threeStepTool } from './abTools.js'
import type { RowResult, SideRound } from './againstReport.js'
import { benchPrefix, deletePrefix, drainWith, pool, serverUsec, silentLogger, stderrProgress, summarize } from './lib.js'

type Lib = typeof Index & Pick<typeof Testing, 'scriptedModel'>
type Side = 'this' | 'ref'

/** One-step calls a drain block enqueues and drains. */
const DRAIN = 400

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

async function loadLib(root: string, js: boolean): Promise<Lib> {
  const load = sideImporter(root, js)
  const [index, testing] = await Promise.all([load('src/index.ts'), load('src/testing/index.ts')])
  return { ...index, scriptedModel: testing.scriptedModel } as Lib
}

/**
 * One side's host with workers at concurrency 20 (as againstSide's runTool rows), warmed up; and a
 * host of its own, without running workers, for the drain rows (its calls wait until `drain`).
 */
async function openSide(root: string, js: boolean, url: string, tag: string, drains: boolean) {
  const lib = await loadLib(root, js)
  const three = threeStepTool(lib.durableTool)
  const harness = lib.defineHarness({ name: `bench-ab-${tag}`, adapter: lib.scriptedModel([]), tools: [three] })
  const prefix = benchPrefix(`abi-${tag}`)
  const host = lib.createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 20, sweepEveryMs: 0 })
  const call = (sessionId: string) => host.open(harness, { sessionId }).runTool({ name: 'three', input: {} })
  for (let i = 0; i < 200; i++) await call('warm')
  await pool(2000, 20, (i) => call(`warm-${i % 20}`))
  const drainHarness = lib.defineHarness({
    name: `bench-abd-${tag}`,
    adapter: lib.scriptedModel([]),
    tools: [oneStepTool(lib.durableTool)],
  })
  const drainPrefix = benchPrefix(`abd-${tag}`)
  const drainHost = lib.createHarnessHost({ redis: url, harnesses: [drainHarness], prefix: drainPrefix, logger: silentLogger })
  const enqueue = (block: number) => enqueueOneStep(lib, drainHost, drainHarness, `d-${block}`, DRAIN)
  const drain = () => drainWith(() => drainHost.startWorkers({ concurrency: 50, sweepEveryMs: 0 }), 'tools.', DRAIN)
  // the drain's code path warm too (each block starts its workers anew; their code stays compiled)
  if (drains) for (let w = 1; w <= 5; w++) await enqueue(-w).then(drain)
  return {
    call,
    enqueue,
    drain,
    close: async () => {
      await workers.close()
      await host.close()
      await drainHost.close()
      await deletePrefix(url, prefix)
      await deletePrefix(url, drainPrefix)
    },
  }
}

async function main(): Promise<void> {
  const roots = { this: arg('this'), ref: arg('ref') }
  const url = arg('redis')
  const blocks = Number(arg('blocks') ?? '150')
  if (!roots.this || !roots.ref || !url) throw new Error('againstInterleaved: needs --this <lib> --ref <lib> --redis <url>')
  const js = process.argv.includes('--js')
  const rowIds = arg('rows')?.split(',')
  const drains = !rowIds || rowIds.some((id) => id === 'drain-50' || id === 'cpu-drain-50')
  const stats = new Redis(url, { maxRetriesPerRequest: 1 })
  const sides = {} as Record<Side, Awaited<ReturnType<typeof openSide>>>
  for (const side of ['this', 'ref'] as const) {
    stderrProgress(`[interleave] ${side}: loading and warming up`)
    sides[side] = await openSide(roots[side]!, js, url, side, drains)
  }
  const rounds: SideRound[] = []
  try {
    for (let k = 0; k < blocks; k++) {
      if (k % 20 === 0) stderrProgress(`[interleave] block pair ${k + 1}/${blocks}`)
      const order = k % 2 === 0 ? (['this', 'ref'] as const) : (['ref', 'this'] as const)
      for (const side of order) {
        const { call } = sides[side]
        const rows: Record<string, RowResult> = {}
        const samples: number[] = []
        for (let i = 0; i < 30; i++) {
          const t0 = performance.now()
          await call(`seq-${k}`)
          samples.push(performance.now() - t0)
        }
        rows['runTool-p50'] = { value: summarize(samples).p50 }
        const cpu0 = process.cpuUsage()
        const server0 = await serverUsec(stats)
        const t0 = performance.now()
        await pool(300, 20, (i) => call(`par-${k}-${i % 20}`))
        const ms = performance.now() - t0
        const cpu = process.cpuUsage(cpu0)
        const server = (await serverUsec(stats)) - server0
        rows['runTool-20'] = { value: (300 / ms) * 1000 }
        rows['cpu-20'] = { value: (cpu.user + cpu.system + server) / 300 }
        if (drains) {
          await sides[side].enqueue(k)
          const dCpu0 = process.cpuUsage()
          const dServer0 = await serverUsec(stats)
          const dMs = await sides[side].drain()
          const dCpu = process.cpuUsage(dCpu0)
          const dServer = (await serverUsec(stats)) - dServer0
          rows['drain-50'] = { value: (DRAIN / dMs) * 1000 }
          rows['cpu-drain-50'] = { value: (dCpu.user + dCpu.system + dServer) / DRAIN }
        }
        rounds.push({ round: k, side, rows })
      }
    }
  } finally {
    for (const side of ['this', 'ref'] as const) await sides[side].close()
    stats.disconnect()
  }
  process.stdout.write(`AB-RESULT ${JSON.stringify({ rounds })}\n`)
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    stderrProgress(`[interleave] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    process.exit(1)
  },
)
