// One side of `npm run bench -- --against <ref>` for one round: this tree's row driver run against the
// library source under `--lib <root>` (this tree, or the ref's temporary worktree), so both sides are
// measured by the same driver code and differ only in the library. Prints one line
// `AB-RESULT {"rows":{...}}` on stdout: a value a row, or the reason the row could not be measured
// (an older library without an API the row needs). Progress goes to stderr.
// `npx tsx scripts/bench/againstSide.ts --lib <root> --redis <url> --rows runTool-p50,drain-10 [--quick] [--js]`
// `--cpu-prof <dir>`: a V8 CPU profile of the measured part of the runTool-20 and drain rows only
// (after the warm-up), one `<row>.cpuprofile` each; compare sides as shares
// of each profile's total (docs/BENCHMARKS.md, "Profiling").
import { mkdirSync, writeFileSync } from 'node:fs'
import { Session as Inspector } from 'node:inspector'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import type * as Index from '../../src/index.js'
import type * as Log from '../../src/log/index.js'
import type * as Queue from '../../src/queue/index.js'
import type * as Testing from '../../src/testing/index.js'
import { enqueueOneStep, oneStepTool, sideImporter, threeStepTool } from './abTools.js'
import type { RowResult } from './againstReport.js'
import { startRawBullmq } from './bullmq.js'
import { startFloorWorker } from './floor.js'
import {
  benchPrefix,
  deletePrefix,
  drainWith,
  type Drainable,
  type OwnCpu,
  pool,
  profileCommands,
  silentLogger,
  stderrProgress,
  summarize,
  withOwnCpu,
} from './lib.js'

type Lib = typeof Index &
  Pick<typeof Testing, 'scriptedModel'> &
  Pick<typeof Log, 'SessionLog'> &
  Pick<typeof Queue, 'bullPrefix' | 'toolQueueName'>

/** The library as the tree under `root` has it (its own node_modules resolve its imports). */
async function loadLib(root: string): Promise<Lib> {
  // `--js`: the side's compiled library (compileSide.ts), else its TypeScript source under tsx
  const load = sideImporter(root, process.argv.includes('--js'))
  const [index, testing, log, queue] = await Promise.all([
    load('src/index.ts'),
    load('src/testing/index.ts'),
    load('src/log/index.ts'),
    load('src/queue/index.ts'),
  ])
  return {
    ...index,
    scriptedModel: testing.scriptedModel,
    SessionLog: log.SessionLog,
    bullPrefix: queue.bullPrefix,
    toolQueueName: queue.toolQueueName,
  } as Lib
}

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

/** Runs `measure` under the V8 profiler when `dir` is given, writing `<dir>/<row>.cpuprofile`. */
async function profiled<T>(dir: string | undefined, row: string, measure: () => Promise<T>): Promise<T> {
  if (!dir) return measure()
  const inspector = new Inspector()
  inspector.connect()
  const post = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve, reject) => inspector.post(method, params, (err, res) => (err ? reject(err) : resolve(res))))
  await post('Profiler.enable')
  await post('Profiler.setSamplingInterval', { interval: 100 })
  await post('Profiler.start')
  try {
    return await measure()
  } finally {
    const { profile } = (await post('Profiler.stop')) as { profile: unknown }
    inspector.disconnect()
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `${row}.cpuprofile`), JSON.stringify(profile))
  }
}

/** Times the warm-up runs the runTool rows' sequence before they are measured. */
const WARM_CYCLES = 3
/** Drains at a concurrency before the measured one (the drain and floor rows). */
const WARM_DRAINS = 2

const message = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 300)

async function main(): Promise<void> {
  const root = arg('lib')
  const url = arg('redis')
  const wanted = new Set((arg('rows') ?? '').split(',').filter(Boolean))
  if (!root || !url || wanted.size === 0) throw new Error('againstSide: needs --lib <root> --redis <url> --rows <ids>')
  const quick = process.argv.includes('--quick')
  const profileDir = arg('cpu-prof')
  const size = quick ? { seq: 100, callers: 500, drain: 1000, warm: 500 } : { seq: 200, callers: 2000, drain: 2000, warm: 2000 }
  const callers = 20
  const perCall = (us: number) => Math.round(us / size.callers)
  /** One CPU row: both processes' µs a call, with the split on stderr. */
  const cpuRow = (id: string, cpu: OwnCpu, calls: number, what: string) => {
    rows[id] = { value: (cpu.userUs + cpu.systemUs + cpu.serverUs) / calls }
    progress(
      `[side] ${id} ${what}: Node user ${perCall(cpu.userUs)} µs, system ${perCall(cpu.systemUs)} µs, redis-server ${perCall(cpu.serverUs)} µs`,
    )
  }
  const progress = stderrProgress
  const rows: Record<string, RowResult> = {}
  const failAll = (ids: string[], e: unknown) => ids.forEach((id) => wanted.has(id) && (rows[id] = { error: message(e) }))
  const want = (...ids: string[]) => ids.some((id) => wanted.has(id))

  let lib: Lib
  try {
    lib = await loadLib(root)
  } catch (e) {
    failAll([...wanted], `loading its library: ${message(e)}`)
    return void process.stdout.write(`AB-RESULT ${JSON.stringify({ rows })}\n`)
  }
  const prefix = benchPrefix('ab')
  const stats = new Redis(url, { maxRetriesPerRequest: 1 })
  try {
    const three = threeStepTool(lib.durableTool)
    const harness = lib.defineHarness({ name: 'bench-ab', adapter: lib.scriptedModel([]), tools: [three, oneStepTool(lib.durableTool)] })
    const host = lib.createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: silentLogger })
    try {
      const call = (sessionId: string) => host.open(harness, { sessionId }).runTool({ name: 'three', input: {} })
      if (want('runTool-p50', 'runTool-20', 'cpu-20', 'commands', 'lua-calls')) {
        const workers = host.startWorkers({ concurrency: callers, sweepEveryMs: 0 })
        try {
          progress('[side] warm-up')
          // V8 compiles a hot function after many runs: the first 1,000 calls at 20 callers ran at
          // about 60% of the steady rate (more code on the path warms up later): measured once warm.
          // The measured rows' own sequence (calls one at a time, then 20 callers) runs three times:
          // after one, the switch between the two still invalidated optimized code and V8's compiler
          // threads spent 40-50 µs a call of this tree's library in runTool-20, against 20-25 after
          // three, where e98a13e's were at 15-23 (docs/decisions/bench-method.md)
          for (let cycle = 0; cycle < WARM_CYCLES; cycle++) {
            for (let i = 0; i < 200; i++) await call('warm')
            await pool(size.warm, callers, (i) => call(`warm-${cycle}-${i % callers}`))
          }
          if (want('runTool-p50')) {
            const samples: number[] = []
            for (let i = 0; i < size.seq; i++) {
              const t0 = performance.now()
              await call('seq')
              samples.push(performance.now() - t0)
            }
            rows['runTool-p50'] = { value: summarize(samples).p50 }
          }
          if (want('runTool-20', 'cpu-20')) {
            const { result: ms, cpu } = await withOwnCpu(stats, () =>
              profiled(profileDir, 'runTool-20', () => pool(size.callers, callers, (i) => call(`par-${i % callers}`))),
            )
            rows['runTool-20'] = { value: (size.callers / ms) * 1000 }
            cpuRow('cpu-20', cpu, size.callers, 'a call')
          }
          if (want('commands', 'lua-calls')) {
            // ioredis can trip over a MONITOR line under load ("Command queue state error"): one more try
            const profileOnce = () => profileCommands(url, prefix, 50, () => call('profile'))
            const profile = await profileOnce().catch(profileOnce)
            rows.commands = { value: profile.commandsPerOp }
            rows['lua-calls'] = { value: profile.luaCallsPerOp }
          }
        } catch (e) {
          failAll(
            ['runTool-p50', 'runTool-20', 'cpu-20', 'commands', 'lua-calls'].filter((id) => !rows[id]),
            e,
          )
        } finally {
          await workers.close()
        }
      }
      const enqueue = (tag: string, n: number) => enqueueOneStep(lib, host, harness, tag, n)
      // calls/s, and the CPU both processes spent a call (less load-dependent than calls/s), after
      // WARM_DRAINS drains of the same size that are not measured: the first drains at a concurrency
      // still compiled their path (drain-50 0.81x, cpu-drain-50 1.23x of e98a13e without them, and this
      // tree's five fetch lanes at concurrency 50 gained until its third drain; docs/decisions/bench-method.md)
      const drainRows = async (id: string, cpuId: string, tag: string, start: () => Drainable) => {
        for (let w = 1; w <= WARM_DRAINS; w++) {
          await enqueue(`${tag}-w${w}`, size.drain)
          await drainWith(start, 'tools.', size.drain)
        }
        await enqueue(tag, size.drain)
        const { result: ms, cpu } = await withOwnCpu(stats, () => profiled(profileDir, id, () => drainWith(start, 'tools.', size.drain)))
        rows[id] = { value: (size.drain / ms) * 1000 }
        if (wanted.has(cpuId)) rows[cpuId] = { value: (cpu.userUs + cpu.systemUs + cpu.serverUs) / size.drain }
      }
      for (const c of [10, 50]) {
        if (!want(`drain-${c}`, `cpu-drain-${c}`)) continue
        try {
          progress(`[side] drain ${size.drain} at concurrency ${c}, after ${WARM_DRAINS} of warm-up`)
          await drainRows(`drain-${c}`, `cpu-drain-${c}`, `d-${c}`, () => host.startWorkers({ concurrency: c, sweepEveryMs: 0 }))
        } catch (e) {
          failAll([`drain-${c}`, `cpu-drain-${c}`], e)
        }
      }
      const connection = new Redis(url, { maxRetriesPerRequest: null })
      try {
        for (const c of [10, 50]) {
          if (!want(`floor-${c}`, `cpu-floor-${c}`)) continue
          try {
            progress(`[side] floor ${size.drain} at concurrency ${c}, after ${WARM_DRAINS} of warm-up`)
            await drainRows(`floor-${c}`, `cpu-floor-${c}`, `f-${c}`, () =>
              startFloorWorker(lib, { redisUrl: url, prefix, harness: harness.name, concurrency: c, connection }),
            )
          } catch (e) {
            failAll([`floor-${c}`, `cpu-floor-${c}`], e)
          }
        }
      } finally {
        connection.disconnect()
      }
    } finally {
      await host.close()
    }
    if (want('raw-20', 'cpu-raw-20')) {
      try {
        const raw = await startRawBullmq(url, callers, progress)
        try {
          // measured as runTool-20 and cpu-20 are: the round trips' own CPU is cpu-20's bound (issue 24)
          await pool(size.warm, callers, () => raw.roundTrip())
          const { result: ms, cpu } = await withOwnCpu(stats, () => pool(size.callers, callers, () => raw.roundTrip()))
          rows['raw-20'] = { value: (size.callers / ms) * 1000 }
          if (wanted.has('cpu-raw-20')) cpuRow('cpu-raw-20', cpu, size.callers, 'a round trip')
        } finally {
          await raw.close()
        }
      } catch (e) {
        failAll(['raw-20', 'cpu-raw-20'], e)
      }
    }
  } catch (e) {
    failAll(
      [...wanted].filter((id) => !rows[id]),
      e,
    )
  } finally {
    stats.disconnect()
    await deletePrefix(url, prefix)
  }
  process.stdout.write(`AB-RESULT ${JSON.stringify({ rows })}\n`)
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  },
)
