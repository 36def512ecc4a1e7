// Event waits (issue 29, R20): Redis memory per call parked in step.waitForEvent, 10,000 waits on
// distinct keys, beside a call parked in step.sleep measured in the same run (the baseline: what the
// event index adds). Also how long a sendEvent takes to wake a waiting call (send → result landed).
//   npx tsx scripts/bench/eventWaits.ts [--waits 10000] [--wakes 200] [--long-ids]
// --long-ids: session ids of a UUID's length (36 characters) and call ids of an Anthropic tool_use
// id's (30: `toolu_01` and 22 more), instead of `s-<i>` and `c-<i>`.
// Uses REDIS_URL when set (only its own key prefixes, deleted afterwards); else a private redis-server.
import { pathToFileURL } from 'node:url'
import { toolDefinition } from '@tanstack/ai'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, WaitTimeoutError, type HarnessHost } from '../../src/index.js'
import { indexKeys } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { scriptedModel, startRedisServer } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, freedByKind, keySizes, pause, pool, silentLogger, usedMemory } from './lib.js'

const settle = durableTool(
  toolDefinition({ name: 'settle', description: 'Wait for a payment', inputSchema: z.object({ orderId: z.string(), sleep: z.boolean() }) }),
  async ({ orderId, sleep }, { step }) => {
    if (sleep) {
      await step.sleep('settled', '1h')
      return null
    }
    return step.waitForEvent({
      name: 'settled',
      event: 'payment.settled',
      key: orderId,
      schema: z.object({ amount: z.number() }),
      timeout: '1h',
    })
  },
)
const bench = defineHarness({ name: 'bench-events', adapter: scriptedModel([]), tools: [settle] })

async function withHost<T>(
  url: string,
  label: string,
  fn: (host: HarnessHost, prefix: string, admin: Redis, stopWorkers: () => Promise<unknown>) => Promise<T>,
): Promise<T> {
  const prefix = benchPrefix(label)
  const host = createHarnessHost({ redis: url, harnesses: [bench], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 50, sweepEveryMs: 0 })
  let stopped: Promise<unknown> | undefined
  const stopWorkers = () => (stopped ??= workers.close())
  const admin = new Redis(url)
  try {
    return await fn(host, prefix, admin, stopWorkers)
  } finally {
    await stopWorkers()
    await host.close()
    await deletePrefix(url, prefix)
    admin.disconnect()
  }
}

/** A key's kind: its name with the session, the (event, key) hash and the job id replaced by placeholders; undefined for a shared key. */
function kindOf(key: string): string | undefined {
  const kind = key
    .replace(/\{ev-[0-9a-f]+\}/, '{ev-<hash>}')
    .replace(/call\|s-\d+\|[^:]+$/, '<job>')
    .replace(/:s-\d+:/g, ':<session>:')
  return kind === key ? undefined : kind
}
/** A member of a shared index that is one of the measured calls' (not the warm-up's). */
const measuredMember = (member: string) => /(^|\|)s-\d+(\||$)/.test(member)

interface MemoryFigure {
  /** used_memory a parked call. */
  bytes: number
  /** MEMORY USAGE a parked call by key kind, the shared indexes included (what the call created or grew). */
  perKind: Record<string, number>
  /** used_memory freed a parked call by deleting each kind of key (the shared indexes: the calls' members). */
  freedPerKind: Record<string, number>
}

/** Bytes of used_memory a parked call, `n` calls on distinct sessions (and, for waits, distinct keys), and MEMORY USAGE by key. */
/** The session and call ids of wait `i`: short (`s-<i>`, `c-<i>`), or of a UUID's and an Anthropic tool_use id's length. */
function idsOf(i: number, longIds: boolean) {
  if (!longIds) return { sessionId: `s-${i}`, toolCallId: `c-${i}` }
  return { sessionId: `s-${String(i).padStart(34, '0')}`, toolCallId: `toolu_01${String(i).padStart(22, '0')}` }
}

async function memoryPerCall(
  url: string,
  n: number,
  sleep: boolean,
  progress: (line: string) => void,
  longIds = false,
): Promise<MemoryFigure> {
  return withHost(url, sleep ? 'sleep' : 'wait', async (host, prefix, admin, stopWorkers) => {
    const delayed = new Queue(toolQueueName(bench.name), { connection: admin, prefix: bullPrefix(prefix, 0, 1), skipMetasUpdate: true })
    // a parked call: a delayed job (a sleep), or an event timer (a runTool call's event wait parks without its job)
    const parked = async () => (await delayed.getDelayedCount()) + (await admin.zcard(indexKeys(prefix, 0, 1).eventTimers))
    // warm-up: queue metadata and loaded scripts are in the baseline
    await host
      .open(bench, { sessionId: 'warm' })
      .runTool({ name: 'settle', input: { orderId: 'warm', sleep } }, { timeoutMs: 0 })
      .catch(() => {})
    while ((await parked()) < 1) await pause(50)
    await pause(300)
    const sizesBefore = await keySizes(admin, prefix)
    const before = await usedMemory(admin)
    await pool(n, 200, async (i) => {
      const { sessionId, toolCallId } = idsOf(i, longIds)
      await host
        .open(bench, { sessionId })
        .runTool({ name: 'settle', input: { orderId: `order-${i}`, sleep }, toolCallId }, { timeoutMs: 0 })
        .catch((e: unknown) => {
          if (!(e instanceof WaitTimeoutError)) throw e
        })
    })
    while ((await parked()) < n + 1) await pause(200)
    await pause(500)
    const perCall = Math.round(((await usedMemory(admin)) - before) / n)
    progress(`${sleep ? 'sleep' : 'waitForEvent'}: ${perCall} B a parked call over ${n}`)
    const perKind: Record<string, number> = {}
    for (const [key, bytes] of await keySizes(admin, prefix)) {
      const name = key.slice(prefix.length + 1)
      const kind = kindOf(name) ?? name
      perKind[kind] = (perKind[kind] ?? 0) + bytes - (sizesBefore.get(key) ?? 0)
    }
    for (const kind of Object.keys(perKind)) {
      perKind[kind] = Math.round(perKind[kind]! / n)
      if (Math.abs(perKind[kind]!) < 2) delete perKind[kind]
    }
    await delayed.close()
    await stopWorkers()
    const freedPerKind = await freedByKind(admin, prefix, n, kindOf, measuredMember)
    return { bytes: perCall, perKind, freedPerKind }
  })
}

/** ms from host.sendEvent to the woken call's result, over `n` waits in turn. */
async function wakeLatency(url: string, n: number): Promise<{ p50: number; p99: number }> {
  return withHost(url, 'wake', async (host, prefix, admin) => {
    const delayed = new Queue(toolQueueName(bench.name), { connection: admin, prefix: bullPrefix(prefix, 0, 1), skipMetasUpdate: true })
    const times: number[] = []
    for (let i = 0; i < n; i++) {
      const session = host.open(bench, { sessionId: `w-${i}` })
      const call = session.runTool({ name: 'settle', input: { orderId: `w-${i}`, sleep: false } }, { timeoutMs: 60_000 })
      while ((await delayed.getDelayedCount()) + (await admin.zcard(indexKeys(prefix, 0, 1).eventTimers)) < 1) await pause(5)
      const sent = Date.now()
      await host.sendEvent({ event: 'payment.settled', key: `w-${i}`, payload: { amount: i } })
      await call
      times.push(Date.now() - sent)
    }
    await delayed.close()
    times.sort((a, b) => a - b)
    return { p50: times[Math.floor(n / 2)]!, p99: times[Math.min(n - 1, Math.ceil(n * 0.99) - 1)]! }
  })
}

export async function measureEventWaits(
  url: string,
  options: { waits: number; wakes: number; longIds?: boolean; progress?: (line: string) => void },
) {
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`))
  const sleep = await memoryPerCall(url, options.waits, true, progress, options.longIds)
  const wait = await memoryPerCall(url, options.waits, false, progress, options.longIds)
  const wake = await wakeLatency(url, options.wakes)
  return {
    waits: options.waits,
    wakes: options.wakes,
    sleepBytes: sleep.bytes,
    waitBytes: wait.bytes,
    ratio: Number((wait.bytes / sleep.bytes).toFixed(2)),
    wake,
    sleepPerKind: sleep.perKind,
    waitPerKind: wait.perKind,
    sleepFreedPerKind: sleep.freedPerKind,
    waitFreedPerKind: wait.freedPerKind,
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
    const server = await startRedisServer({})
    url = server.url
    stop = () => server.stop()
  }
  try {
    const longIds = process.argv.includes('--long-ids')
    const r = await measureEventWaits(url, { waits: arg('waits', 10_000), wakes: arg('wakes', 200), longIds })
    console.log(
      `Redis memory per call waiting in step.waitForEvent: ${r.waitBytes} B (target <= 2048 B) over ${r.waits} waits on distinct keys; ` +
        `a call parked in step.sleep in the same run: ${r.sleepBytes} B (ratio ${r.ratio}x)${longIds ? '; UUID-length session ids, 30-character call ids' : ''}`,
    )
    console.log(`  MEMORY USAGE a waiting call, by key (B): ${JSON.stringify(r.waitPerKind)}`)
    console.log(`  MEMORY USAGE a sleeping call, by key (B): ${JSON.stringify(r.sleepPerKind)}`)
    console.log(`  used_memory freed a waiting call by deleting each kind of key (B): ${JSON.stringify(r.waitFreedPerKind)}`)
    console.log(`  used_memory freed a sleeping call by deleting each kind of key (B): ${JSON.stringify(r.sleepFreedPerKind)}`)
    console.log(`sendEvent -> woken call's result: p50 ${r.wake.p50} ms, p99 ${r.wake.p99} ms`)
    console.log(JSON.stringify(r))
  } finally {
    await stop()
  }
}
