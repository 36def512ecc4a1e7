import { toolDefinition } from '@tanstack/ai'
import { Queue, Worker, type Job } from 'bullmq'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { FetchLanes } from '../../src/harness/fetchLanes.js'
import { createHarnessHost, defineHarness, durableTool } from '../../src/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { quiet } from '../helpers/hosts.js'
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
    const processor = (lane: string) => (job: Job) =>
      lanes.run(async () => {
        ranOn.push(lane)
        await new Promise((resolve) => setTimeout(resolve, holdMs))
        return job.id
      })
    const options = { connection, prefix, autorun: false, concurrency: 5 }
    const first = new Worker('tools.lanes', processor('first'), options)
    const spare = new Worker('tools.lanes', processor('spare'), options)
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

  it('a spare lane resumed by another part while the queue is quiet (the error back-off) is paused again', async () => {
    const { spare } = await twoLanes(0)
    await until(async () => spare.isPaused(), 'the spare lane to pause')
    await spare.resume()
    expect(spare.isPaused()).toBe(false)
    await until(async () => spare.isPaused(), 'the spare lane to pause again')
  })

  it("a host's tool queue with 20 slots (two lanes) keeps one fetch blocked on its marker while idle, not two", async () => {
    const url = await getRedisUrl()
    const prefix = uniquePrefix('lanes-host')
    const one = durableTool(toolDefinition({ name: 'one', description: 'One step', inputSchema: z.object({}) }), async (_input, ctx) => {
      await ctx.step.do('a', async () => 1)
      return { ok: true }
    })
    const harness = defineHarness({ name: 'lanes', adapter: scriptedModel([]), tools: [one] })
    const host = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: quiet })
    const workers = host.startWorkers({ concurrency: 20, sweepEveryMs: 0 })
    const admin = rigClient(url)
    closers.push(async () => {
      await workers.close()
      await host.close()
      admin.disconnect()
    })
    expect(await host.open(harness, { sessionId: 's1' }).runTool({ name: 'one', input: {} })).toEqual({ ok: true })
    // BullMQ names a worker's connections after its queue: the tool queue's lanes each have a blocking one
    const name = `${bullPrefix(prefix, 0, 1)}:${Buffer.from(toolQueueName(harness.name)).toString('base64')}`
    const lanes = async () => {
      const clients = String(await admin.client('LIST'))
        .split('\n')
        .filter((line) => line.includes(` name=${name} `))
      return { all: clients.length, blocked: clients.filter((line) => / flags=b /.test(line) && / cmd=bzpopmin/.test(line)).length }
    }
    await until(async () => {
      const seen = await lanes()
      return seen.all >= 2 && seen.blocked === 1
    }, 'one blocked fetch of the two lanes')
  })
})
