// Crash-to-rerun: two worker processes of crashHarness.ts; one takes a `hang` call and is SIGKILLed
// inside the tool (after its first step). The figure is the time from the SIGKILL to the
// `harness.tool.started` record with reason 'rerun' that the other worker writes when BullMQ hands it
// the stalled job (the record's stream id is Redis's clock; same machine). Each sample gets its own
// prefix and fresh workers.
import { Redis } from 'ioredis'
import { createHarnessHost, WaitTimeoutError } from '../../src/index.js'
import type { LogEntry } from '../../src/entries/ops.js'
import { DEFAULT_DURABILITY } from '../../src/harness/defineHarness.js'
import type { RecordOf } from '../../src/log/index.js'
import { toolJobId } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { spawnWorker, type WorkerProcess } from '../../src/testing/index.js'
import { crashHarness } from './crashHarness.js'
import { measureCrashKills, type CrashKills } from './crashKills.js'
import { benchPrefix, deletePrefix, pause, silentLogger, stderrProgress, summarize, type Progress, type Summary } from './lib.js'

/** One crash, in ms from the SIGKILL. */
interface CrashSample {
  /** The rerun's harness.tool.started (the figure). */
  rerunMs: number
  /** What was left of the dead worker's job lock (PTTL just before the kill). */
  lockLeftMs: number
  /** BullMQ's 'stalled' event: a stalled check found the job without its lock and moved it back to wait. */
  stalledMs: number | null
}

interface CrashSetting {
  name: string
  lockMs: number
  stalledMs: number
  /** ms from SIGKILL to the rerun's harness.tool.started, one per sample. */
  samples: number[]
  details: CrashSample[]
  summary: Summary
}

export interface CrashResult {
  settings: CrashSetting[]
  /** Row 4b: a series of kills at the default durability (crashKills.ts). */
  kills: CrashKills
}

const MODULE = 'scripts/bench/crashHarness.ts'

export async function measureCrash(redisUrl: string, options: { quick?: boolean; progress?: Progress } = {}): Promise<CrashResult> {
  const progress = options.progress ?? stderrProgress
  const settings: Array<{ name: string; lockMs: number; stalledMs: number; n: number; env: Record<string, string> }> = [
    { name: 'default', lockMs: DEFAULT_DURABILITY.lockMs, stalledMs: DEFAULT_DURABILITY.stalledMs, n: options.quick ? 1 : 3, env: {} },
    { name: 'tight', lockMs: 1000, stalledMs: 500, n: options.quick ? 2 : 5, env: { BENCH_LOCK_MS: '1000', BENCH_STALLED_MS: '500' } },
  ]
  const out: CrashSetting[] = []
  for (const s of settings) {
    const details: CrashSample[] = []
    for (let i = 0; i < s.n; i++) {
      progress(`[crash] ${s.name} (lockMs ${s.lockMs}, stalledMs ${s.stalledMs}): sample ${i + 1}/${s.n}`)
      const d = await sample(redisUrl, s.env, s.lockMs + s.stalledMs)
      progress(
        `[crash]   SIGKILL -> rerun: ${d.rerunMs} ms (lock had ${d.lockLeftMs} ms left; the stalled check moved it at ${d.stalledMs} ms)`,
      )
      details.push(d)
    }
    const samples = details.map((d) => d.rerunMs)
    out.push({ name: s.name, lockMs: s.lockMs, stalledMs: s.stalledMs, samples, details, summary: summarize(samples) })
  }
  return { settings: out, kills: await measureCrashKills(redisUrl, { kills: options.quick ? 5 : 20, progress }) }
}

async function sample(redisUrl: string, env: Record<string, string>, boundMs: number): Promise<CrashSample> {
  const prefix = benchPrefix('crash')
  const workers: WorkerProcess[] = []
  const host = createHarnessHost({ redis: redisUrl, harnesses: [crashHarness], prefix, logger: silentLogger })
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  try {
    workers.push(...(await Promise.all([0, 1].map(() => spawnWorker({ redisUrl, prefix, module: MODULE, concurrency: 1, env })))))
    const session = host.open(crashHarness, { sessionId: 'crash' })
    const toolCallId = 'hang-1'
    await session.runTool({ name: 'hang', input: { hangMs: 600_000 }, toolCallId }, { timeoutMs: 0 }).catch((e: unknown) => {
      if (!(e instanceof WaitTimeoutError)) throw e
    })
    // the call is inside its wait once its first step is logged
    const step = await poll(async () => (await session.log.read({ types: ['harness.tool.step'] }))[0], 30_000, 'the first step')
    const running = (w: WorkerProcess) => w.lines.some((l) => l.toolCallId === toolCallId && l.msg === 'tool call started')
    const runner = await poll(async () => workers.find(running), 10_000, 'the worker running the call')
    const queueKey = `${bullPrefix(prefix, 0, 1)}:${toolQueueName(crashHarness.name)}`
    const lockLeftMs = await redis.pttl(`${queueKey}:${toolJobId('crash', toolCallId)}:lock`)
    const killedAt = Date.now()
    await runner.kill('SIGKILL')
    const rerun = await poll(
      async () => {
        const started = await session.log.read({ after: step.id, types: ['harness.tool.started'] })
        return started.find((e: LogEntry) => (e.record as RecordOf<'harness.tool.started'>).reason === 'rerun')
      },
      boundMs * 3 + 20_000,
      'the rerun',
      20,
    )
    const events = (await redis.xrange(`${queueKey}:events`, String(killedAt), '+')) as Array<[string, string[]]>
    const stalled = events.find(([, f]) => f[1] === 'stalled')
    return {
      rerunMs: Number(rerun.id.split('-')[0]) - killedAt,
      lockLeftMs,
      stalledMs: stalled ? Number(stalled[0].split('-')[0]) - killedAt : null,
    }
  } finally {
    redis.disconnect()
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await host.close()
    await deletePrefix(redisUrl, prefix)
  }
}

async function poll<T>(fn: () => Promise<T | undefined>, timeoutMs: number, what: string, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await fn()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`crash bench: no ${what} within ${timeoutMs} ms`)
    await pause(everyMs)
  }
}
