// Raw BullMQ baseline, the primitives measurement 2 interleaves with ours: a no-op job's round trip
// (add -> processed -> completion seen through QueueEvents, as users wait for a job) and draining a
// pre-filled queue of no-op jobs at a worker concurrency. Same job options, lock settings and
// connection sharing as our tool jobs, so the ratios show what the durable layer adds.
import { Queue, QueueEvents, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { DEFAULT_DURABILITY } from '../../src/harness/defineHarness.js'
import { bullPrefix, finishedJobs, toolJobOptions } from '../../src/queue/index.js'
import { benchPrefix, deletePrefix, profileCommands, type CommandProfile, type Progress } from './lib.js'

const rawWorkerOptions = (concurrency: number) => ({
  concurrency,
  lockDuration: DEFAULT_DURABILITY.lockMs,
  stalledInterval: DEFAULT_DURABILITY.stalledMs,
  maxStalledCount: Number.MAX_SAFE_INTEGER,
  // as our workers keep finished jobs
  ...finishedJobs(),
})

export interface RawBullmq {
  readonly prefix: string
  /** add a no-op job, wait until QueueEvents reports it completed. */
  roundTrip(): Promise<void>
  /** Pre-fills a new queue with `jobs` no-op jobs; returns its name. */
  prefill(jobs: number): Promise<string>
  /** Times a fresh worker at `concurrency` on a pre-filled queue until all `jobs` completed (ms). */
  drain(name: string, concurrency: number, jobs: number): Promise<number>
  /** MONITOR profiles: one round trip; draining 200 jobs at concurrency 10, per job. */
  profile(): Promise<{ roundTrip: CommandProfile; drain: CommandProfile }>
  close(): Promise<void>
}

/** Starts a raw BullMQ queue + worker (concurrency `callers`) + QueueEvents, warmed up. */
export async function startRawBullmq(redisUrl: string, callers: number, progress: Progress): Promise<RawBullmq> {
  const prefix = benchPrefix('raw')
  const bull = bullPrefix(prefix, 0, 1)
  // like the host: one shared connection for queue and worker commands (BullMQ duplicates it for blocking reads)
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null })
  const eventsConnection = new Redis(redisUrl, { maxRetriesPerRequest: null })
  const queue = new Queue('rt', { connection, prefix: bull })
  const events = new QueueEvents('rt', { connection: eventsConnection, prefix: bull })
  const worker = new Worker('rt', async () => {}, { connection, prefix: bull, ...rawWorkerOptions(callers) })
  // each waiting caller adds a 'closing' listener to the queue and two to the events
  queue.setMaxListeners(callers + 10)
  events.setMaxListeners(2 * callers + 10)
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady(), worker.waitUntilReady()])
  const roundTrip = async () => {
    const job = await queue.add('noop', {}, toolJobOptions)
    await job.waitUntilFinished(events, 10_000)
  }
  // a fresh QueueEvents misses its first event: warm up until it reports completions
  progress('[raw bullmq] warm-up (QueueEvents, scripts, JIT)')
  for (let ok = 0, tries = 0; ok < 200; tries++) {
    if (tries > 400) throw new Error('raw bullmq: QueueEvents never reported completions')
    await roundTrip().then(
      () => ok++,
      () => progress('[raw bullmq] a warm-up round trip timed out (a fresh QueueEvents missed it)'),
    )
  }
  let drains = 0
  return {
    prefix,
    roundTrip,
    async prefill(jobs) {
      const name = `drain${drains++}`
      await prefill(connection, bull, name, jobs)
      return name
    },
    drain: (name, concurrency, jobs) => drainQueue(connection, bull, name, concurrency, jobs),
    async profile() {
      const rt = await profileCommands(redisUrl, prefix, 50, roundTrip)
      await prefill(connection, bull, 'drainprof', 200)
      const d = perJob(await profileCommands(redisUrl, prefix, 1, () => drainQueue(connection, bull, 'drainprof', 10, 200)), 200)
      return { roundTrip: rt, drain: d }
    },
    async close() {
      await worker.close()
      await events.close()
      await queue.close()
      connection.disconnect()
      eventsConnection.disconnect()
      await deletePrefix(redisUrl, prefix)
    },
  }
}

/** A profile of one op that did `n` jobs, per job. */
export function perJob(p: CommandProfile, n: number): CommandProfile {
  const per = (x: number) => Math.round((x / n) * 100) / 100
  const map = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, per(v)]))
  return {
    ...p,
    ops: n,
    commandsPerOp: per(p.commandsPerOp),
    luaCallsPerOp: per(p.luaCallsPerOp),
    byCommand: map(p.byCommand),
    byConnection: map(p.byConnection),
  }
}

async function prefill(connection: Redis, bull: string, name: string, jobs: number): Promise<void> {
  const queue = new Queue(name, { connection, prefix: bull })
  for (let i = 0; i < jobs; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, jobs - i) }, () => ({ name: 'noop', data: {}, opts: toolJobOptions }))
    await queue.addBulk(batch)
  }
  await queue.close()
}

/** Starts a worker on a pre-filled queue; ms from its start to the last completion. */
async function drainQueue(connection: Redis, bull: string, name: string, concurrency: number, jobs: number): Promise<number> {
  let done = 0
  let resolve!: () => void
  const all = new Promise<void>((r) => (resolve = r))
  const t0 = performance.now()
  const worker = new Worker(name, async () => {}, { connection, prefix: bull, ...rawWorkerOptions(concurrency) })
  worker.on('completed', () => {
    if (++done === jobs) resolve()
  })
  await all
  const ms = performance.now() - t0
  await worker.close()
  return ms
}
