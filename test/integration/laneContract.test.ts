// The local lane writes BullMQ's own structures (startCall.lua): its job must be the job BullMQ's
// add and its worker's fetch would have left. One job each way, on two queues of one Redis, and a diff
// of everything BullMQ keeps of it. The only differences allowed, each with its reason:
// - `timestamp`, `processedOn`: the clock of each write (checked to be now, then compared as '<now>');
// - the lock's token: the fetch's own (BullMQ: the worker's, the lane: its slot's); its duration is compared;
// - the events stream's entry ids: Redis makes them (the entries' fields are compared, in order);
// - `opts`: cjson's encoding of a Lua table (BullMQ) and JSON.stringify (the lane) order keys otherwise;
//   compared as parsed objects, which is how BullMQ reads them back;
// - the marker of a lane that does not wait on it: see the first test.
// Drift check: remove a field startCall.lua writes (e.g. 'ats'), and the first test fails.
import { Queue, QueueEvents, Worker } from 'bullmq'
import { afterEach, describe, expect, it } from 'vitest'
import { defineHarness } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { SessionLog, startCall, toolJobId, type RedisClient } from '../../src/log/index.js'
import { toolJob, toolQueueName } from '../../src/queue/index.js'
import { installedBullmq, laneJobStart, VERIFIED_BULLMQ } from '../../src/lane/bullmqInternals.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { lockOfTool } from '../helpers/lockOf.js'
import { until } from '../helpers/log.js'
import { cleanupPrefix, getRedisUrl, queuePrefix, rigClient, uniquePrefix } from '../rig.js'

const onCluster = Boolean(process.env.REDIS_CLUSTER_NODES)
const NAME = 'tools.contract'
const LOCK_MS = 30_000
const WORKER = 'contract-worker'

type Side = { queue: Queue; worker: Worker; prefix: string }

/** Everything BullMQ keeps of one job and its queue, with what differs by nature (times, tokens, entry ids) normalized. */
async function snapshot(redis: RedisClient, side: Side, jobId: string) {
  const key = (k: string) => `${side.prefix}:${NAME}:${k}`
  const hash: Record<string, unknown> = await redis.hgetall(key(jobId))
  // a difference allowed: BullMQ's opts are cjson's encoding of a Lua table (its keys in the table's own
  // order), the lane's JSON.stringify of the same object; both read back (JSON.parse) as one object
  if (typeof hash.opts === 'string') hash.opts = JSON.parse(hash.opts)
  for (const field of ['timestamp', 'processedOn'])
    if (field in hash) {
      expect(Math.abs(Number(hash[field]) - Date.now())).toBeLessThan(60_000)
      hash[field] = '<now>'
    }
  const zset = (k: string) => redis.zrange(key(k), '0', '-1', 'WITHSCORES')
  const lock = await redis.get(key(`${jobId}:lock`))
  const lockTtl = await redis.pttl(key(`${jobId}:lock`))
  const events = (await redis.xrange(key('events'), '-', '+')).map(([, fields]) => fields.join(' '))
  const meta = await redis.hgetall(key('meta'))
  return {
    hash,
    wait: await redis.lrange(key('wait'), 0, -1),
    active: await redis.lrange(key('active'), 0, -1),
    paused: await redis.lrange(key('paused'), 0, -1),
    prioritized: await zset('prioritized'),
    delayed: await zset('delayed'),
    marker: await zset('marker'),
    stalled: await redis.smembers(key('stalled')),
    id: await redis.get(key('id')),
    lock: lock === null ? null : lockTtl > LOCK_MS - 10_000 ? '<token, held lockMs>' : `<token, ${lockTtl} ms left>`,
    events,
    meta,
  }
}

describe.skipIf(onCluster)("a job the lane starts is the job BullMQ's add and fetch leave (startCall.lua)", () => {
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  async function side(label: string): Promise<Side & { redis: RedisClient; url: string }> {
    const url = await getRedisUrl()
    const prefix = uniquePrefix(label)
    const redis = rigClient(url, { maxRetriesPerRequest: null })
    // as the host's queues and workers are made (queue/queues.ts, harness/workers.ts)
    const queue = new Queue(NAME, { connection: redis, prefix, streams: { events: { maxLen: 100 } } })
    const worker = new Worker(NAME, null, { connection: redis, prefix, autorun: false, lockDuration: LOCK_MS, name: WORKER })
    await queue.waitUntilReady()
    await worker.waitUntilReady()
    closers.push(async () => {
      await worker.close()
      await queue.close()
      redis.disconnect()
      await cleanupPrefix(url, prefix)
    })
    return { queue, worker, prefix, redis, url }
  }

  const call = { toolCallId: 'c1', name: 'charge', input: { amount: 5 }, mark: 'mark' }
  const job = toolJob('s1', call)
  const jobId = toolJobId('s1', 'c1')
  const begin = { harness: 'contract', fingerprint: 'f', version: '' }

  /** The job by BullMQ's public path: Queue.add, then the worker's fetch. */
  async function byBullmq(fetch: boolean, before?: (side: Side) => Promise<unknown>) {
    const bull = await side('contract-bull')
    await before?.(bull)
    await bull.queue.add(job.name, job.data, job.opts)
    if (fetch) expect((await bull.worker.getNextJob('token-bull', { block: false }))?.id).toBe(jobId)
    return { side: bull, snapshot: () => snapshot(bull.redis, bull, jobId) }
  }

  /** The job by the lane: startCall.lua with the keys and fields laneJobStart makes. */
  async function byLane(wake: boolean, before?: (side: Side) => Promise<unknown>) {
    const lane = await side('contract-lane')
    await before?.(lane)
    const start = laneJobStart(lane.worker, job, 'token-lane', wake)
    if (!start) throw new Error('laneJobStart refused a plain job')
    const log = new SessionLog(lane.redis, lane.prefix, 's1')
    const reply = await startCall(log.stream, call, begin, start)
    return { side: lane, reply, snapshot: () => snapshot(lane.redis, lane, jobId) }
  }

  it('started: the job hash, its lists and sets, its lock, the marker and the events stream match', async () => {
    const bull = await (await byBullmq(true)).snapshot()
    const waking = await byLane(true)
    expect(waking.reply).toMatchObject({ status: 'started' })
    const lane = await waking.snapshot()
    expect(lane).toEqual(bull)
    // the only difference: the marker of a lane that does not wait on it. BullMQ's fetch sets the base
    // marker for the next fetch; the lane sets it only when its loop waits on it (wake), since a marker
    // nobody waits for makes the lane's next wait return at once to fetch nothing (the stale marker
    // EagerStartWorker drops after BullMQ's own fetches, dropStaleMarker.lua)
    const notWaking = await (await byLane(false)).snapshot()
    expect({ ...notWaking, marker: bull.marker }).toEqual(bull)
    expect(notWaking.marker).toEqual([])
  })

  it("a paused queue: the lane starts nothing, the job waits as BullMQ's add leaves it", async () => {
    const pause = (side: Side) => side.queue.pause()
    const bull = await (await byBullmq(false, pause)).snapshot()
    const paused = await byLane(true, pause)
    expect(paused.reply).toMatchObject({ status: 'queued' })
    expect(await paused.snapshot()).toEqual(bull)
  })

  it("a global rate limit: the lane starts nothing, the job waits for BullMQ's fetch, which counts it in the limiter", async () => {
    const lane = await side('contract-limited')
    await lane.queue.setGlobalRateLimit(1, 60_000)
    const start = laneJobStart(lane.worker, job, 'token-lane', true)!
    expect(await startCall(new SessionLog(lane.redis, lane.prefix, 's1').stream, call, begin, start)).toMatchObject({ status: 'queued' })
    expect(await lane.queue.getJobState(jobId)).toBe('waiting')
    expect((await lane.worker.getNextJob('token-bull', { block: false }))?.id).toBe(jobId)
    expect(await lane.redis.get(`${lane.prefix}:${NAME}:limiter`)).toBe('1')
  })

  it('the bullmq installed is the one the lane was verified with', () => {
    expect(installedBullmq).toMatch(new RegExp(`^${VERIFIED_BULLMQ.replace('.x', '').replace('.', '\\.')}\\.`))
  })
})

describe.skipIf(onCluster)("BullMQ's QueueEvents sees a runTool call the lane started", () => {
  const hosts = useInProcessHosts()

  it('active, then completed, for a job started in its request write', async () => {
    const locks: string[] = []
    const client = rigClient(hosts.url())
    hosts.defer(() => client.disconnect())
    const lockOf = lockOfTool(
      () => client,
      () => ({ prefix, harness: 'laneEvents', sessionId: 'qe1' }),
      locks,
    )
    const harness = defineHarness({ name: 'laneEvents', adapter: scriptedModel([]), tools: [lockOf] })
    const { host, prefix } = hosts.start(harness, 'lane-events')
    const session = host.open(harness, { sessionId: 'qe1' })
    // the first call may come before the lane waits for jobs
    await session.runTool({ name: 'lockOf', input: {} })
    const events = new QueueEvents(toolQueueName('laneEvents'), {
      connection: rigClient(hosts.url(), { maxRetriesPerRequest: null }),
      prefix: queuePrefix(prefix, 'qe1'),
    })
    hosts.defer(() => events.close())
    await events.waitUntilReady()
    const heard: string[] = []
    const hear = (kind: string) => (event: { jobId: string }) => heard.push(`${kind} ${event.jobId}`)
    events.on('added', hear('added'))
    events.on('waiting', hear('waiting'))
    events.on('active', hear('active'))
    events.on('completed', hear('completed'))
    // QueueEvents reads from the stream's end once its blocking read is sent: a job added before may be missed
    await new Promise((resolve) => setTimeout(resolve, 200))
    locks.length = 0
    await session.runTool({ name: 'lockOf', input: {} })
    expect(locks[0]).toMatch(/:start\d+$/)
    const [requested] = (await session.log.read())
      .map((e) => e.record)
      .filter((r) => r.type === 'harness.tool.requested')
      .slice(-1) as Array<{ toolCallId: string }>
    const id = toolJobId('qe1', requested!.toolCallId)
    await until(async () => heard.includes(`completed ${id}`), 'QueueEvents heard the completion')
    expect(heard.filter((e) => e.endsWith(` ${id}`))).toEqual([`added ${id}`, `waiting ${id}`, `active ${id}`, `completed ${id}`])
  })
})
