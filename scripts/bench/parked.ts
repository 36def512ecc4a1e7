// Parked calls (R7): Redis memory per parked call, and how late a step.sleep wakes.
//   npx tsx scripts/bench/parked.ts [--parked 10000] [--sleeps 1000] [--uuid]
// (--uuid: UUID session ids and provider-style call ids instead of the short ids of the bench's rows)
// Uses REDIS_URL when set (only its own key prefixes, deleted afterwards); else a private redis-server
// with hz 100. Progress goes to stderr, the figures to stdout.
import { randomBytes, randomUUID } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import { toolDefinition } from '@tanstack/ai'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, WaitTimeoutError, type HarnessHost } from '../../src/index.js'
import type { RecordOf } from '../../src/log/index.js'
import { shardBase, toolJobId } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { scriptedModel, startRedisServer } from '../../src/testing/index.js'
import { deletePrefix, freedByKind, keySizes, pause, pool, silentLogger, usedMemory } from './lib.js'

// The shape of the fixture's nap: one step.do, then step.sleep; the result says when it went on.
const nap = durableTool(
  toolDefinition({ name: 'nap', description: 'Sleep, then say when it went on', inputSchema: z.object({ ms: z.number() }) }),
  async ({ ms }, { step }) => {
    await step.do('before', async () => Date.now())
    await step.sleep('nap', ms)
    return { continuedAt: Date.now() }
  },
)
const bench = defineHarness({ name: 'bench-parked', adapter: scriptedModel([]), tools: [nap] })

export interface ParkedOptions {
  /** Calls parked at once for the memory figure. */
  parked: number
  /** Sleeps of 1–2 s for the lateness figure. */
  sleeps: number
  concurrency?: number
  /** Memory runs, one per figure: how many of the parked calls share one session. Default [1, 100]. */
  callsPerSession?: number[]
  /**
   * 'short' (default): session ids `p-<n>` and call ids `nap-<n>`, as in every earlier run. 'uuid':
   * a UUID session id and a provider-style call id (`toolu_` and 24 characters), what a deployment
   * stores: every key name, index member and job id grows with them.
   */
  ids?: 'short' | 'uuid'
  progress?: (line: string) => void
}

interface MemoryFigure {
  parked: number
  callsPerSession: number
  usedMemoryBefore: number
  usedMemoryAfter: number
  bytesPerParkedCall: number
  /** MEMORY USAGE of the keys of the first session and of its first call's BullMQ job. */
  sampleKeys: Record<string, number>
  /**
   * MEMORY USAGE a parked call, summed over every key the parking wrote or grew and grouped by the
   * key's kind (the session ids and job ids in a name replaced by placeholders): where the bytes go.
   */
  perKind: Record<string, number>
  /** used_memory freed a parked call by deleting each kind of key (the shared indexes: the calls' members), workers stopped. */
  freedPerKind: Record<string, number>
}

export interface ParkedResult {
  memory: MemoryFigure[]
  lateness: { sleeps: number; p50: number; p90: number; p99: number; max: number; min: number }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

async function withHost<T>(
  redisUrl: string,
  label: string,
  concurrency: number,
  fn: (host: HarnessHost, prefix: string, stopWorkers: () => Promise<unknown>) => Promise<T>,
): Promise<T> {
  const prefix = `bench-${label}-${randomBytes(3).toString('hex')}`
  const host = createHarnessHost({ redis: redisUrl, harnesses: [bench], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency })
  let stopped: Promise<unknown> | undefined
  const stopWorkers = () => (stopped ??= workers.close())
  const admin = new Redis(redisUrl)
  try {
    return await fn(host, prefix, stopWorkers)
  } finally {
    await stopWorkers()
    await host.close()
    await deletePrefix(redisUrl, prefix)
    admin.disconnect()
  }
}

export async function measureParked(redisUrl: string, options: ParkedOptions): Promise<ParkedResult> {
  const { parked, sleeps, concurrency = 50 } = options
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`))
  const admin = new Redis(redisUrl)
  try {
    // ---- memory: `parked` calls parked for an hour, `per` calls a session ----
    const memory: MemoryFigure[] = []
    // the ids of the n-th session and the i-th call (the first session's keys are sampled by name);
    // 'uuid': a UUID-shaped tag and a provider-style one of this run, ending in the number
    const uuid = options.ids === 'uuid'
    const tag = randomUUID().slice(0, 30)
    const hex = randomBytes(9).toString('hex')
    const sessionOf = (n: number) => (uuid ? `${tag}${String(n).padStart(6, '0')}` : `p-${n}`)
    const callIdOf = (i: number) => (uuid ? `toolu_${hex}${String(i).padStart(6, '0')}` : `nap-${i}`)
    for (const per of options.callsPerSession ?? [1, 100]) {
      memory.push(
        await withHost(redisUrl, 'mem', concurrency, async (host, prefix, stopWorkers) => {
          const delayed = new Queue(toolQueueName(bench.name), {
            connection: admin,
            prefix: bullPrefix(prefix, 0, 1),
            skipMetasUpdate: true,
          })
          // warm-up: queue metadata, loaded scripts and one finished call are in the baseline
          await host.open(bench, { sessionId: 'warm' }).runTool({ name: 'nap', input: { ms: 0 } })
          await pause(500)
          const sizesBefore = await keySizes(admin, prefix)
          const usedMemoryBefore = await usedMemory(admin)
          progress(`memory: used_memory ${usedMemoryBefore} B before; parking ${parked} nap calls (1 h each), ${per} a session`)
          await pool(parked, 200, async (i) => {
            const s = host.open(bench, { sessionId: sessionOf(Math.floor(i / per)) })
            // enqueue only: a zero wait returns at once (WaitTimeoutError) and the call goes on durably
            await s.runTool({ name: 'nap', input: { ms: 3_600_000 }, toolCallId: callIdOf(i) }, { timeoutMs: 0 }).catch((e: unknown) => {
              if (!(e instanceof WaitTimeoutError)) throw e
            })
            if ((i + 1) % 2000 === 0) progress(`  enqueued ${i + 1}/${parked}`)
          })
          for (let last = -1; ;) {
            const n = await delayed.getDelayedCount()
            if (n >= parked) break
            if (n !== last) progress(`  parked ${n}/${parked}`)
            last = n
            await pause(250)
          }
          await pause(500) // let the last replies and client buffers drain
          const usedMemoryAfter = await usedMemory(admin)
          const sampleKeys: Record<string, number> = {}
          const jobKey = `${bullPrefix(prefix, 0, 1)}:${toolQueueName(bench.name)}:${toolJobId(sessionOf(0), callIdOf(0))}`
          for (const key of [
            `${shardBase(prefix, 0, 1)}:${sessionOf(0)}:log`,
            `${shardBase(prefix, 0, 1)}:${sessionOf(0)}:steps`,
            `${shardBase(prefix, 0, 1)}:${sessionOf(0)}:calls`,
            jobKey,
          ]) {
            sampleKeys[key.slice(prefix.length + 1)] = Number(await admin.memory('USAGE', key, 'SAMPLES', '0'))
          }
          const kindOf = (key: string) =>
            key
              .replace(/p-\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{6}\d{6}/g, '<session>')
              .replace(/call\|[^:]+$/, '<job>')
          const perKind: Record<string, number> = {}
          for (const [key, bytes] of await keySizes(admin, prefix)) {
            const kind = kindOf(key.slice(prefix.length + 1))
            perKind[kind] = (perKind[kind] ?? 0) + bytes - (sizesBefore.get(key) ?? 0)
          }
          for (const kind of Object.keys(perKind)) {
            perKind[kind] = Math.round(perKind[kind]! / parked)
            if (Math.abs(perKind[kind]!) < 2) delete perKind[kind]
          }
          await delayed.close()
          const bytesPerParkedCall = Math.round((usedMemoryAfter - usedMemoryBefore) / parked)
          progress(`memory: ${bytesPerParkedCall} B per parked call (${per} a session)`)
          await stopWorkers()
          // the warm-up session's keys are shared (not measured); the shared indexes give up the parked calls' members
          const measured = (name: string) => (kindOf(name).includes('<') && !name.includes('warm') ? kindOf(name) : undefined)
          const freedPerKind = await freedByKind(admin, prefix, parked, measured, (member) => !member.includes('warm'))
          return { parked, callsPerSession: per, usedMemoryBefore, usedMemoryAfter, bytesPerParkedCall, sampleKeys, perKind, freedPerKind }
        }),
      )
    }

    // ---- lateness: `sleeps` calls of 1–2 s, all started at once ----
    const lateness = await withHost(redisUrl, 'late', concurrency, async (host) => {
      progress(`lateness: ${sleeps} sleeps of 1–2 s at worker concurrency ${concurrency}`)
      const late: number[] = []
      await Promise.all(
        Array.from({ length: sleeps }, async (_, i) => {
          const s = host.open(bench, { sessionId: `l-${i}` })
          const ms = 1000 + Math.floor(Math.random() * 1000)
          const { continuedAt } = (await s.runTool({ name: 'nap', input: { ms } }, { timeoutMs: 120_000 })) as { continuedAt: number }
          const [sleep] = await s.log.read({ types: ['harness.tool.sleep'] })
          late.push(continuedAt - (sleep!.record as RecordOf<'harness.tool.sleep'>).wakeAt)
          if (late.length % 250 === 0) progress(`  woke ${late.length}/${sleeps}`)
        }),
      )
      late.sort((a, b) => a - b)
      return { sleeps, p50: percentile(late, 50), p90: percentile(late, 90), p99: percentile(late, 99), max: late.at(-1)!, min: late[0]! }
    })
    return { memory, lateness }
  } finally {
    admin.disconnect()
  }
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(`--${name}`)
    return i >= 0 ? Number(process.argv[i + 1]) : fallback
  }
  let stop = async () => {}
  let url = process.env.REDIS_URL
  if (!url) {
    const server = await startRedisServer({ hz: 100 })
    process.stderr.write(`private redis-server at ${server.url} (hz 100, no AOF)\n`)
    url = server.url
    stop = () => server.stop()
  }
  try {
    const ids = process.argv.includes('--uuid') ? 'uuid' : 'short'
    const result = await measureParked(url, { parked: arg('parked', 10_000), sleeps: arg('sleeps', 1_000), ids })
    const { memory, lateness: l } = result
    for (const m of memory) {
      console.log(
        `Redis memory per parked call: ${m.bytesPerParkedCall} B with ${m.callsPerSession} call(s) a session ` +
          `(used_memory ${m.usedMemoryBefore} -> ${m.usedMemoryAfter} B over ${m.parked} parked calls)`,
      )
      console.log(`  first session's keys and first job (MEMORY USAGE, B): ${JSON.stringify(m.sampleKeys)}`)
      console.log(`  MEMORY USAGE a parked call, by key (B): ${JSON.stringify(m.perKind)}`)
      console.log(`  used_memory freed a parked call by deleting each kind (B): ${JSON.stringify(m.freedPerKind)}`)
    }
    console.log(
      `Wake-up lateness over ${l.sleeps} sleeps of 1-2 s: p50 ${l.p50} ms, p90 ${l.p90} ms, p99 ${l.p99} ms, max ${l.max} ms (min ${l.min})`,
    )
    console.log(JSON.stringify(result))
  } finally {
    await stop()
  }
}
