import { Queue, type Job } from 'bullmq'
import { afterEach, describe, expect, it } from 'vitest'
import { AttemptLocks, LockWatchingWorker } from '../../src/call/index.js'
import type { RedisClient } from '../../src/log/index.js'
import { EagerStartWorker } from '../../src/lane/bullmqInternals.js'
import { afterSendTo } from '../../src/lane/sendHooks.js'
import { cleanupPrefix, getRedisUrl, rigClient, uniquePrefix } from '../rig.js'
import { until } from '../helpers/log.js'

const events = new WeakMap<object, string[]>()
const note = (worker: object, job: Job | undefined) => events.get(worker)?.push(job ? `fetched ${job.id}` : 'fetched none')

/** The workers under test, recording each fetch in order after it returned (BullMQ's protected hook). */
class RecordingEager extends EagerStartWorker<unknown> {
  protected override async moveToActive(token: string, name?: string): Promise<Job> {
    const job = await super.moveToActive(token, name)
    note(this, job as Job | undefined)
    return job
  }
}
class RecordingPlain extends LockWatchingWorker<unknown> {
  protected override async moveToActive(token: string, name?: string): Promise<Job> {
    const job = await super.moveToActive(token, name)
    note(this, job as Job | undefined)
    return job
  }
}

describe('a tool job starts when its fetch returns it (lane/bullmqInternals.ts EagerStartWorker)', () => {
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  async function served(
    Worker: typeof RecordingEager | typeof RecordingPlain,
    processor: (job: Job, events: string[], token?: string) => Promise<unknown>,
    concurrency = 10,
  ) {
    const url = await getRedisUrl()
    const prefix = uniquePrefix('eager')
    const connection = rigClient(url, { maxRetriesPerRequest: null })
    const seen: string[] = []
    const run = (job: Job, token?: string) => processor(job, seen, token)
    const options = { connection, prefix, concurrency, autorun: false }
    const worker =
      Worker === RecordingEager
        ? new RecordingEager('tools.eager', run, options, new AttemptLocks(30_000), connection, new WeakSet())
        : new RecordingPlain('tools.eager', run, options, new AttemptLocks(30_000))
    events.set(worker, seen)
    void worker.run()
    const queue = new Queue('tools.eager', { connection, prefix })
    closers.push(async () => {
      await worker.close()
      await queue.close()
      connection.disconnect()
      await cleanupPrefix(url, prefix)
    })
    await worker.waitUntilReady()
    return { worker, queue, events: seen, connection }
  }

  const started = async (job: Job, events: string[]) => {
    events.push(`started ${job.id}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
    return `done ${job.id}`
  }

  it('jobs fetched one after another start as each is fetched; a plain worker starts each only after its fetch returned it', async () => {
    const burst = [1, 2, 3].map((i) => ({ name: 't', data: {}, opts: { jobId: `b${i}` } }))
    const ended = (queue: Queue) => async () => (await queue.getJobCounts('completed')).completed === 3
    const eager = await served(RecordingEager, started)
    await eager.queue.addBulk(burst)
    await until(ended(eager.queue), 'the three jobs completed')
    // BullMQ fetches b2 and b3 in sequence, then once more (empty): b2 started inside its own fetch
    // (the hook records after the fetch returns), before b3's
    const at = (events: string[], event: string, from = 0) => events.indexOf(event, from)
    expect(at(eager.events, 'started b2')).toBeLessThan(at(eager.events, 'fetched b2'))
    expect(at(eager.events, 'started b3')).toBeLessThan(at(eager.events, 'fetched none', at(eager.events, 'fetched b3')))

    const plain = await served(RecordingPlain, started)
    await plain.queue.addBulk(burst)
    await until(ended(plain.queue), 'the three jobs completed')
    // a plain worker starts a job only after its fetch returned it (how many fetches it makes first,
    // down to the empty one, depends on when its blocking wait woke: not asserted)
    expect(at(plain.events, 'fetched b2')).toBeGreaterThanOrEqual(0)
    expect(at(plain.events, 'started b2')).toBeGreaterThan(at(plain.events, 'fetched b2'))
    expect(at(plain.events, 'started b3')).toBeGreaterThan(at(plain.events, 'fetched b3'))
  })

  it('after a job that came in alone, the lane fetches once more and waits: the marker its fetch set again is dropped', async () => {
    const eager = await served(RecordingEager, started)
    await eager.queue.add('t', {}, { jobId: 'first' })
    await until(async () => (await eager.queue.getJobState('first')) === 'completed', 'the first job completed')
    const redis = eager.connection
    await until(async () => eager.events.includes('fetched first') && eager.events.at(-1) === 'fetched none', 'the lane waiting')
    // no base marker: a wait blocks until a job comes (BullMQ's wait for a delayed job's marker is '1')
    expect(await redis.zscore(eager.worker.keys.marker!, '0')).toBeNull()
    await eager.queue.add('t', {}, { jobId: 'second' })
    await until(async () => (await eager.queue.getJobState('second')) === 'completed', 'the second job completed')
    const between = eager.events.slice(eager.events.indexOf('fetched first') + 1, eager.events.indexOf('fetched second'))
    expect(between.filter((e) => e === 'fetched none')).toHaveLength(1)
  })

  async function eagerLane(processor: (job: Job, events: string[], token?: string) => Promise<unknown>, concurrency = 10) {
    const lane = await served(RecordingEager, processor, concurrency)
    if (!(lane.worker instanceof RecordingEager)) throw new Error('served made no eager lane')
    return { ...lane, worker: lane.worker }
  }
  /** Adds a job with the lane's fetch right behind it on the same connection (as runTool's add is: enqueue.ts). */
  const addFetchedBehind = (lane: { worker: RecordingEager; queue: Queue; connection: RedisClient }, jobId: string) => {
    afterSendTo(lane.connection, lane.queue.keys.wait!, () => lane.worker.fetchNow())
    return lane.queue.add('t', {}, { jobId })
  }
  const waitingLane = async (lane: { events: string[] }) =>
    until(async () => lane.events.at(-1) === 'fetched none', 'the lane waiting for jobs')

  it('a job added with the lane fetching behind it is fetched by that fetch, runs once, and BullMQ completes it', async () => {
    const tokens = new Map<string, string[]>()
    const lane = await eagerLane(async (job, events, token) => {
      tokens.set(job.id!, [...(tokens.get(job.id!) ?? []), token ?? ''])
      return started(job, events)
    })
    await waitingLane(lane)
    const before = lane.events.length
    await addFetchedBehind(lane, 'behind')
    await until(async () => (await lane.queue.getJobState('behind')) === 'completed', 'the job completed')
    // the add's marker woke the lane; the marker drop sent behind fetchNow's fetch found the queue empty,
    // so the lane's fetch after that wake-up answered nothing without a round trip, and it waits again
    // (no stale marker left for a second empty fetch)
    await waitingLane(lane)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(lane.events.slice(before).filter((e) => e.startsWith('fetched'))).toEqual(['fetched none'])
    expect(await lane.connection.zscore(lane.worker.keys.marker!, '0')).toBeNull()
    expect(tokens.get('behind')).toHaveLength(1)
    // the token of fetchNow's fetch, not of the lane's wake-up after the add's marker
    expect(tokens.get('behind')![0]).toMatch(/:now\d+$/)
    expect((await lane.queue.getJob('behind'))?.returnvalue).toBe('done behind')
    // the lane's own wake-up found nothing and it waits again; the next job comes in as ever
    await waitingLane(lane)
    await lane.queue.add('t', {}, { jobId: 'after' })
    await until(async () => (await lane.queue.getJobState('after')) === 'completed', 'a later job completed')
    expect(tokens.get('after')![0]).not.toMatch(/:now/)
  })

  it('a job another producer adds beside a fetch behind an add is fetched at once, whichever Redis runs first (the skipped fetch strands nothing)', async () => {
    const lane = await eagerLane(started)
    const other = rigClient(await getRedisUrl(), { maxRetriesPerRequest: null })
    const producer = new Queue('tools.eager', { connection: other, prefix: lane.worker.opts.prefix! })
    closers.push(async () => {
      await producer.close()
      other.disconnect()
    })
    for (let i = 0; i < 5; i++) {
      await waitingLane(lane)
      await Promise.all([addFetchedBehind(lane, `ours${i}`), producer.add('t', {}, { jobId: `theirs${i}` })])
      // well under BullMQ's blocking wait (5 s): a job left in the wait list without its marker would sit there that long
      await until(
        async () => (await lane.queue.getJobCounts('completed')).completed === 2 * (i + 1),
        `both jobs of round ${i} completed`,
        3_000,
      )
    }
  })

  it('a lane whose slots are all counted, or that is closing, does not fetch behind an add: its own fetch takes the job as ever', async () => {
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const tokens = new Map<string, string>()
    const lane = await eagerLane(async (job, events, token) => {
      tokens.set(job.id!, token ?? '')
      if (job.id === 'busy') await held
      return started(job, events)
    }, 2)
    await lane.queue.add('t', {}, { jobId: 'busy' })
    await until(async () => tokens.has('busy'), 'the first job running')
    await waitingLane(lane)
    // one job running and the lane's wait pending: both of its two slots counted, so the wait's own
    // fetch (woken by the add's marker) takes the job, never a third fetch past the concurrency
    await addFetchedBehind(lane, 'full')
    await until(async () => (await lane.queue.getJobState('full')) === 'completed', 'the second job completed')
    expect(tokens.get('full')).not.toMatch(/:now/)
    release()
    await until(async () => (await lane.queue.getJobState('busy')) === 'completed', 'the first job completed')
    const closing = lane.worker.close()
    lane.worker.fetchNow()
    await closing
    expect(await lane.queue.getJobCounts('active')).toEqual({ active: 0 })
  })

  it('every job runs once, and BullMQ completes it with what its attempt returned, or fails it with what it threw', async () => {
    const runs = new Map<string, number>()
    const { queue } = await served(RecordingEager, async (job, events) => {
      runs.set(job.id!, (runs.get(job.id!) ?? 0) + 1)
      if (job.data.throwAtOnce) throw new Error(`refused ${job.id}`)
      return started(job, events)
    })
    await queue.addBulk(
      Array.from({ length: 40 }, (_, i) => ({ name: 't', data: { throwAtOnce: i % 10 === 0 }, opts: { jobId: `j${i}` } })),
    )
    await until(async () => {
      const { completed, failed } = await queue.getJobCounts('completed', 'failed')
      return completed + failed === 40
    }, 'all 40 jobs ended')
    expect([...runs.values()].every((n) => n === 1)).toBe(true)
    expect(runs.size).toBe(40)
    expect((await queue.getJob('j1'))?.returnvalue).toBe('done j1')
    const failed = await queue.getJob('j10')
    expect(await failed?.getState()).toBe('failed')
    expect(failed?.failedReason).toBe('refused j10')
  })
})
