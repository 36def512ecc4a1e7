// The check for gone worker processes moves a job with BullMQ's own writes (reclaimJob.lua): the job
// must be left as BullMQ's stalled check leaves a job whose lock expired. One job each way, on two
// queues of one Redis, and a diff of everything BullMQ keeps of it and its queue. The differences
// allowed: the times of each side's add and fetch; the events' entry ids (Redis makes them); the
// stalled check's own `stalled-check` key (it spaces BullMQ's checks; a move of one job is no check). And the move is refused, nothing written,
// when the lock is not the one seen: renewed since (a new expiry), another token, or gone.
// Also: a worker named after its process (nameAfterProcess) takes lock tokens that begin with its name.
import { Queue, Worker } from 'bullmq'
import { afterEach, describe, expect, it } from 'vitest'
import { reclaimJob, type HeldJob, type RedisClient } from '../../src/log/index.js'
import { nameAfterProcess, reclaimOf } from '../../src/lane/bullmqInternals.js'
import { cleanupPrefix, getRedisUrl, rigClient, uniquePrefix } from '../rig.js'

const onCluster = Boolean(process.env.REDIS_CLUSTER_NODES)
const NAME = 'tools.reclaim'
const LOCK_MS = 30_000

type Side = { queue: Queue; worker: Worker; prefix: string; redis: RedisClient }

async function snapshot(side: Side, jobId: string) {
  const { redis } = side
  const key = (k: string) => `${side.prefix}:${NAME}:${k}`
  const hash = await redis.hgetall(key(jobId))
  // the clock of each side's add and fetch
  for (const field of ['timestamp', 'processedOn']) if (field in hash) hash[field] = '<now>'
  return {
    hash,
    wait: await redis.lrange(key('wait'), 0, -1),
    active: await redis.lrange(key('active'), 0, -1),
    stalled: await redis.smembers(key('stalled')),
    marker: await redis.zrange(key('marker'), '0', '-1', 'WITHSCORES'),
    lock: await redis.get(key(`${jobId}:lock`)),
    events: (await redis.xrange(key('events'), '-', '+')).map(([, fields]) => fields.join(' ')),
    meta: await redis.hgetall(key('meta')),
  }
}

describe.skipIf(onCluster)("a gone process's job is moved as BullMQ's stalled check moves it (reclaimJob.lua)", () => {
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  async function side(label: string, processor: (() => Promise<unknown>) | null = null): Promise<Side> {
    const url = await getRedisUrl()
    const prefix = uniquePrefix(label)
    const redis = rigClient(url, { maxRetriesPerRequest: null })
    const queue = new Queue(NAME, { connection: redis, prefix })
    const worker = new Worker(NAME, processor, { connection: redis, prefix, autorun: false, lockDuration: LOCK_MS, maxStalledCount: 5 })
    await queue.waitUntilReady()
    await worker.waitUntilReady()
    closers.push(async () => {
      await worker.close()
      await queue.close()
      redis.disconnect()
      await cleanupPrefix(url, prefix)
    })
    return { queue, worker, prefix, redis }
  }

  /** A job of the side's queue, fetched (active, locked) under `token`. */
  async function activeJob(s: Side, token: string): Promise<HeldJob> {
    await s.queue.add('reclaimed', { n: 1 }, { jobId: 'job-1' })
    const job = await s.worker.getNextJob(token)
    expect(job?.id).toBe('job-1')
    const lock = `${s.prefix}:${NAME}:job-1:lock`
    return { queue: 0, jobId: 'job-1', token, expiresAt: Number(await s.redis.pexpiretime(lock)) }
  }

  it("moves the job as BullMQ's stalled check moves one whose lock expired: hash (stc), lists, marker, events; the lock gone", async () => {
    const [bull, ours] = [await side('reclaim-bull'), await side('reclaim-ours')]
    await activeJob(bull, 'gone:1')
    // BullMQ's check: the lock expired (removed here), one check marks the job stalled, the next moves it
    await bull.redis.del(`${bull.prefix}:${NAME}:job-1:lock`)
    await bull.worker['moveStalledJobsToWait']()
    await bull.redis.del(`${bull.prefix}:${NAME}:stalled-check`)
    await bull.worker['moveStalledJobsToWait']()
    // ours: a check of the same kind marked it first (the queue's own stalled check runs all along)
    const held = await activeJob(ours, 'gone:1')
    await ours.worker['moveStalledJobsToWait']()
    expect(await reclaimJob(ours.redis, held, reclaimOf(ours.worker, 'job-1')!)).toBe(true)
    const [a, b] = [await snapshot(bull, 'job-1'), await snapshot(ours, 'job-1')]
    expect(b).toEqual(a)
    expect(b.hash.stc).toBe('1')
    expect(b.wait).toEqual(['job-1'])
    expect(b.lock).toBeNull()
    expect(b.events.slice(-2)).toEqual(['event waiting jobId job-1 prev active', 'event stalled jobId job-1'])
  })

  it('moves nothing when the lock is not the one seen: renewed since, another token, or gone', async () => {
    const s = await side('reclaim-refused')
    const held = await activeJob(s, 'gone:1')
    const reclaim = reclaimOf(s.worker, 'job-1')!
    const before = await snapshot(s, 'job-1')
    // a renewal moved its expiry (the process was only slow)
    expect(await reclaimJob(s.redis, { ...held, expiresAt: held.expiresAt - 1_000 }, reclaim)).toBe(false)
    // another process holds it now
    expect(await reclaimJob(s.redis, { ...held, token: 'other:1' }, reclaim)).toBe(false)
    expect(await snapshot(s, 'job-1')).toEqual(before)
    await s.redis.del(`${s.prefix}:${NAME}:job-1:lock`)
    expect(await reclaimJob(s.redis, held, reclaim)).toBe(false)
    expect((await snapshot(s, 'job-1')).active).toEqual(['job-1'])
  })

  it("a worker named after its process takes lock tokens that begin with its name (BullMQ's `<worker id>:<n>`)", async () => {
    // a job that runs until the worker closes
    const s = await side('reclaim-token', () => new Promise((resolve) => closers.push(async () => resolve(undefined))))
    nameAfterProcess(s.worker, 'dh-live-0123456789abcdef-')
    await s.queue.add('reclaimed', { n: 1 }, { jobId: 'job-1' })
    s.worker.run().catch(() => {})
    const lock = `${s.prefix}:${NAME}:job-1:lock`
    let token: string | null = null
    for (let i = 0; i < 200 && !token; i++) {
      token = await s.redis.get(lock)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(token).toMatch(/^dh-live-0123456789abcdef-\d+:/)
  })
})
