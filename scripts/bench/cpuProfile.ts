// Node CPU profile of draining durable calls: `npx tsx scripts/bench/cpuProfile.ts [--calls 4000] [--concurrency 10] [--out file]`.
// Enqueues `calls` runTool calls of a 1-step durable tool (timeoutMs 0), then starts in-process
// workers under the V8 profiler (as `node --cpu-prof` does) until the last one completes. Prints the
// top frames by self time and the self time per package; writes the .cpuprofile for a viewer.
// `--codec`: the durable calls with aesGcmCodec. `--raw`: the same for raw BullMQ no-op jobs (our job options and worker settings), for comparison.
// `--floor`: the same durable calls drained by the floor worker of floor.ts (a bare BullMQ worker that
// only sends the scripts a 1-step call cannot do without: two for a call begun with its request): the design's floor.
// Uses REDIS_URL when set (only its own key prefix, deleted afterwards); else a private redis-server.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { Session } from 'node:inspector'
import { toolDefinition } from '@tanstack/ai'
import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { z } from 'zod'
import { aesGcmCodec, createHarnessHost, defineHarness, durableTool, WaitTimeoutError } from '../../src/index.js'
import { randomBytes } from 'node:crypto'
import { scriptedModel, startRedisServer } from '../../src/testing/index.js'
import { SessionLog } from '../../src/log/index.js'
import { bullPrefix, finishedJobs, toolJobOptions, toolQueueName } from '../../src/queue/index.js'
import { startFloorWorker } from './floor.js'
import { benchPrefix, deletePrefix, pool, silentLogger } from './lib.js'

const one = durableTool(
  toolDefinition({ name: 'one', description: 'One trivial step', inputSchema: z.object({}) }),
  async (_input, { step }) => {
    await step.do('a', async () => 1)
    return { ok: true }
  },
)
const harness = defineHarness({ name: 'bench-profile', adapter: scriptedModel([]), tools: [one] })

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount: number
  children?: number[]
}
interface Profile {
  nodes: Node[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/** Self time per frame and per package, in % of the profile's samples. */
function summarizeProfile(profile: Profile, top = 25) {
  const total = profile.samples.length
  const frames = new Map<string, number>()
  const packages = new Map<string, number>()
  const hits = new Map<number, number>()
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1)
  for (const node of profile.nodes) {
    const n = hits.get(node.id) ?? 0
    if (!n) continue
    const { functionName, url, lineNumber } = node.callFrame
    const file = url.replace(/^file:\/\//, '').replace(process.cwd() + '/', '')
    const key = `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim()
    frames.set(key, (frames.get(key) ?? 0) + n)
    const pkg =
      /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1] ?? (file.startsWith('src/') ? 'ours (src/)' : file ? 'node/other' : functionName)
    packages.set(pkg, (packages.get(pkg) ?? 0) + n)
  }
  const pct = (n: number) => Math.round((1000 * n) / total) / 10
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => ({ frame: k, pct: pct(n) }))
  return { samples: total, frames: sorted(frames).slice(0, top), packages: sorted(packages).slice(0, 15) }
}

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1]! : fallback
}

const calls = Number(arg('calls', '4000'))
const concurrency = Number(arg('concurrency', '10'))
let stop = async () => {}
let url = process.env.REDIS_URL
if (!url) {
  const server = await startRedisServer({ hz: 100 })
  url = server.url
  stop = () => server.stop()
}
const prefix = benchPrefix('prof')
// `--log info`: the workers log at info to /dev/null (a deployment's default level), not silently
const logger = arg('log', '') ? pino({ level: arg('log', 'info') }, pino.destination('/dev/null')) : silentLogger
// `--codec`: with aesGcmCodec (docs/encryption.md), to see what sealing costs
const codec = process.argv.includes('--codec') ? { codec: aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' }) } : {}
const host = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger, ...codec })
const session = new Session()
const raw = process.argv.includes('--raw')
const floor = process.argv.includes('--floor')
const connection = new Redis(url, { maxRetriesPerRequest: null })
const queue = new Queue('raw', { connection, prefix: bullPrefix(prefix, 0, 1) })
try {
  if (raw) {
    for (let i = 0; i < calls; i += 1000)
      await queue.addBulk(Array.from({ length: Math.min(1000, calls - i) }, () => ({ name: 'noop', data: {}, opts: toolJobOptions })))
  } else
    await pool(calls, 200, (i) =>
      host
        .open(harness, { sessionId: `p-${Math.floor(i / 10)}` })
        .runTool({ name: 'one', input: {} }, { timeoutMs: 0 })
        .catch((e: unknown) => {
          if (!(e instanceof WaitTimeoutError)) throw e
        }),
    )
  session.connect()
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))))
  await post('Profiler.enable')
  await post('Profiler.setSamplingInterval', { interval: 100 })
  await post('Profiler.start')
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  const workers = raw
    ? (() => {
        const worker = new Worker('raw', async () => {}, { connection, prefix: bullPrefix(prefix, 0, 1), concurrency, ...finishedJobs() })
        return { workers: [worker], close: () => worker.close() }
      })()
    : floor
      ? startFloorWorker(
          { SessionLog, bullPrefix, toolQueueName },
          { redisUrl: url, prefix, harness: harness.name, concurrency, connection },
        )
      : host.startWorkers({ concurrency, sweepEveryMs: 0 })
  let done = 0
  await new Promise<void>((resolve) => {
    for (const w of workers.workers)
      w.on('completed', () => {
        if (++done === calls) resolve()
      })
  })
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  const { profile } = (await post('Profiler.stop')) as { profile: Profile }
  await workers.close()
  const out = arg('out', 'bench/drain.cpuprofile')
  mkdirSync(dirname(out), { recursive: true }) // bench/ is git-ignored: a fresh clone has none
  writeFileSync(out, JSON.stringify(profile))
  const summary = summarizeProfile(profile)
  console.log(
    `${calls} ${raw ? 'raw no-op jobs' : floor ? 'durable calls (floor: only the scripts a call needs)' : 'durable calls'} drained at concurrency ${concurrency} in ${Math.round(ms)} ms (${Math.round((calls / ms) * 1000)}/s); profile: ${out}`,
  )
  console.log(
    `Node CPU while draining: ${Math.round((cpu.user + cpu.system) / calls)} µs a call (user ${Math.round(cpu.user / 1000)} ms, system ${Math.round(cpu.system / 1000)} ms)`,
  )
  console.log('\nself time by package (% of samples):')
  for (const p of summary.packages) console.log(`  ${String(p.pct).padStart(5)}%  ${p.frame}`)
  console.log('\ntop frames by self time:')
  for (const f of summary.frames) console.log(`  ${String(f.pct).padStart(5)}%  ${f.frame}`)
} finally {
  session.disconnect()
  await queue.close()
  connection.disconnect()
  await host.close()
  await deletePrefix(url, prefix)
  await stop()
}
