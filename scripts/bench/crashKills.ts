// Crash-to-rerun over a series of kills (row 4b): three worker processes of crashHarness.ts at the
// default durability (lockMs 8 s, stalledMs 5 s), concurrency 1 each, and one `hang` call that never
// ends by itself. Each kill SIGKILLs the worker whose attempt runs the call; the figure is the time
// from the SIGKILL to the next attempt's `harness.tool.started` record (reason 'rerun', the stream
// id is Redis's clock; same machine). Before each kill a replacement worker has started and the two
// idle workers have been up at least UP_MS (a process checks others once its connection is 5 s old:
// src/liveness/deadWorkers.ts), as in a deployment whose workers are not all starting.
import { Redis } from 'ioredis'
import { createHarnessHost, WaitTimeoutError } from '../../src/index.js'
import { toolJobId, type RecordOf } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { spawnWorker, startRedisServer, type WorkerProcess } from '../../src/testing/index.js'
import { crashHarness } from './crashHarness.js'
import { benchPrefix, deletePrefix, pause, silentLogger, stderrProgress, summarize, type Progress, type Summary } from './lib.js'

export interface CrashKills {
  kills: number
  workers: number
  /** ms from each SIGKILL to the next attempt's `rerun` record. */
  samples: number[]
  summary: Summary
}

const MODULE = 'scripts/bench/crashHarness.ts'
const WORKERS = 3
const WAIT_MS = 120_000
const UP_MS = 6_000

export async function measureCrashKills(redisUrl: string, options: { kills?: number; progress?: Progress } = {}): Promise<CrashKills> {
  const kills = options.kills ?? 20
  const progress = options.progress ?? stderrProgress
  const prefix = benchPrefix('kills')
  const up = new Map<WorkerProcess, number>()
  const spawn = async () => {
    const worker = await spawnWorker({ redisUrl, prefix, module: MODULE, concurrency: 1, env: { LOG_LEVEL: 'debug' } })
    up.set(worker, Date.now())
    return worker
  }
  const workers: WorkerProcess[] = []
  const host = createHarnessHost({ redis: redisUrl, harnesses: [crashHarness], prefix, logger: silentLogger })
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  const samples: number[] = []
  try {
    workers.push(...(await Promise.all(Array.from({ length: WORKERS }, spawn))))
    const session = host.open(crashHarness, { sessionId: 'kills' })
    const toolCallId = 'hang-kills'
    const queueKey = `${bullPrefix(prefix, 0, 1)}:${toolQueueName(crashHarness.name)}`
    const jobKey = `${queueKey}:${toolJobId('kills', toolCallId)}`
    await session.runTool({ name: 'hang', input: { hangMs: 3_600_000 }, toolCallId }, { timeoutMs: 0 }).catch((e: unknown) => {
      if (!(e instanceof WaitTimeoutError)) throw e
    })
    const started = async () =>
      (await session.log.read({ types: ['harness.tool.started'] })).map((e) => ({
        id: e.id,
        ...(e.record as RecordOf<'harness.tool.started'>),
      }))
    // the first attempt is inside its wait once its first step is logged
    await poll(async () => (await session.log.read({ types: ['harness.tool.step'] }))[0], 'the first step')
    for (let k = 0; k < kills; k++) {
      const attempt = (await started()).at(-1)!.attempt
      const running = (w: WorkerProcess) =>
        w.lines.some((l) => l.toolCallId === toolCallId && l.msg === 'tool call started' && l.attempt === attempt)
      const runner = await poll(async () => workers.find(running), `the worker running attempt ${attempt}`)
      // the attempt's first step is replayed before its wait: give it a moment to get there
      await pause(300)
      const idleUp = Math.min(...workers.filter((w) => w !== runner).map((w) => up.get(w)!))
      await pause(Math.max(0, idleUp + UP_MS - Date.now()))
      const killedAt = Date.now()
      await runner.kill('SIGKILL')
      workers.splice(workers.indexOf(runner), 1)
      const replacement = spawn()
      const rerun = await poll(
        async () => (await started()).find((s) => s.attempt > attempt && s.reason === 'rerun'),
        'the rerun',
        async () =>
          JSON.stringify({
            job: await redis.hgetall(jobKey),
            active: await redis.lrange(`${queueKey}:active`, 0, -1),
            wait: await redis.lrange(`${queueKey}:wait`, 0, -1),
            lock: await redis.get(`${jobKey}:lock`),
            started: await started(),
            alive: workers.map((w) => w.proc.pid),
          }),
      )
      const ms = Number(rerun.id.split('-')[0]) - killedAt
      samples.push(ms)
      progress(`[crash] kill ${k + 1}/${kills}: SIGKILL -> rerun ${ms} ms`)
      workers.push(await replacement)
    }
    return { kills, workers: WORKERS, samples, summary: summarize(samples) }
  } finally {
    redis.disconnect()
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await host.close()
    await deletePrefix(redisUrl, prefix)
  }
}

async function poll<T>(fn: () => Promise<T | undefined>, what: string, state?: () => Promise<string>): Promise<T> {
  const deadline = Date.now() + WAIT_MS
  for (;;) {
    const value = await fn()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`crash bench: no ${what} within ${WAIT_MS} ms${state ? `: ${await state()}` : ''}`)
    await pause(20)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // `npx tsx scripts/bench/crashKills.ts [--kills N]`: on a private redis-server, or REDIS_URL's
  const server = process.env.REDIS_URL ? undefined : await startRedisServer({ appendonly: false, hz: 100 })
  const kills = Number(process.argv[process.argv.indexOf('--kills') + 1]) || 20
  try {
    const r = await measureCrashKills(process.env.REDIS_URL ?? server!.url, { kills })
    console.log(JSON.stringify({ samples: r.samples, summary: r.summary }))
  } finally {
    await server?.stop()
  }
}
