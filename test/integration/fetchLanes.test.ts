import { Queue, Worker, type Job } from 'bullmq'
import { afterEach, describe, expect, it } from 'vitest'
import { FetchLanes } from '../../src/harness/fetchLanes.js'
import { getRedisUrl, rigClient, uniquePrefix } from '../rig.js'
import { until } from '../helpers/log.js'

describe('spare fetch lanes of a tool queue (fetchLanes.ts)', () => {
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  /** A queue served by two lanes (real BullMQ workers) whose attempts FetchLanes counts; each job holds `holdMs`. */
  async function twoLanes(holdMs: number) {
    const url = await getRedisUrl()
    const prefix = uniquePrefix('lanes')
    const connection = rigClient(url, { maxRetriesPerRequest: null })
    const lanes = new FetchLanes()
    const ranOn: string[] = []
    const process = (lane: string) => (job: Job) =>
      lanes.run(async () => {
        ranOn.push(lane)
        await new Promise((resolve) => setTimeout(resolve, holdMs))
        return job.id
      })
    const options = { connection, prefix, autorun: false, concurrency: 5 }
    const first = new Worker('tools.lanes', process('first'), options)
    const spare = new Worker('tools.lanes', process('spare'), options)
    lanes.serve([spare])
    const queue = new Queue('tools.lanes', { connection, prefix })
    closers.push(async () => {
      lanes.stop()
      await Promise.all([first.close(), spare.close()])
      await queue.close()
      connection.disconnect()
    })
    void first.run()
    void spare.run()
    return { lanes, first, spare, queue, ranOn }
  }

  it('a spare lane stops fetching while the queue is idle, so a call that comes in alone runs on the first lane', async () => {
    const { spare, queue, ranOn } = await twoLanes(0)
    await until(async () => spare.isPaused(), 'the spare lane to pause')
    for (let i = 0; i < 5; i++) {
      const job = await queue.add('one', {})
      await until(async () => (await queue.getJobState(job.id!)) === 'completed', `job ${i} to complete`)
    }
    expect(ranOn).toEqual(['first', 'first', 'first', 'first', 'first'])
    expect(spare.isPaused()).toBe(true)
  })

  it('a spare lane fetches again as soon as two attempts run at once, and stops again once the queue is quiet', async () => {
    const { spare, queue, ranOn } = await twoLanes(300)
    await until(async () => spare.isPaused(), 'the spare lane to pause')
    // more jobs than the first lane's 5 slots: the spare is resumed and takes some of them
    await queue.addBulk(Array.from({ length: 20 }, () => ({ name: 'many', data: {} })))
    await until(async () => !spare.isPaused(), 'the spare lane to resume')
    await until(async () => (await queue.getJobCounts('completed')).completed === 20, 'the 20 jobs to complete')
    expect(ranOn.filter((lane) => lane === 'spare').length).toBeGreaterThan(0)
    await until(async () => spare.isPaused(), 'the spare lane to pause')
  })
})
