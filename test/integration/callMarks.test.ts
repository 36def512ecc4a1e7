// A new runTool call of a replay-safe tool is begun with its request, and its job carries a mark
// (src/log/callMarks.ts) that lets its first delivery run without a begin of its own (issue 24). What
// must hold all the same: fencing (an attempt that skipped its begin writes nothing once another
// attempt began the call) and issue 21's guarantee (a job runs only its logged call).
import { toolDefinition } from '@tanstack/ai'
import { Queue, type Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool } from '../../src/index.js'
import { FencedError } from '../../src/errors/index.js'
import { callFingerprint, SessionLog } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { quiet, useInProcessHosts } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { queuePrefix, rigClient, uniquePrefix } from '../rig.js'

describe('a runTool call begun with its request', () => {
  const hosts = useInProcessHosts()
  const ran: number[] = []
  const safe = durableTool(
    toolDefinition({ name: 'safe', description: 'x', inputSchema: z.object({ n: z.number() }) }),
    async ({ n }, { step }) => {
      await step.do('run', async () => void ran.push(n))
      return { n }
    },
  )
  const never = durableTool(
    toolDefinition({ name: 'never', description: 'x', inputSchema: z.object({ n: z.number() }) }),
    async ({ n }) => ({ n }),
    { replay: 'never' },
  )
  const harness = defineHarness({ name: 'marks', adapter: scriptedModel([]), tools: [safe, never] })

  /** A host with no workers (its calls wait in the queue), its workers started later, and the queue of a session. */
  function deployment(label: string) {
    const prefix = uniquePrefix(label)
    const host = createHarnessHost({ redis: hosts.url(), harnesses: [harness], prefix, logger: quiet })
    hosts.defer(() => host.close())
    const queue = (sessionId: string) => {
      const q = new Queue(toolQueueName(harness.name), { connection: { url: hosts.url() }, prefix: queuePrefix(prefix, sessionId) })
      hosts.defer(() => q.close())
      return q
    }
    const startWorkers = () => {
      const workers = host.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
      hosts.defer(() => workers.close())
    }
    return { host, prefix, queue, startWorkers }
  }

  async function waitingJob(queue: Queue): Promise<Job> {
    let job: Job | undefined
    await until(async () => !!(job = (await queue.getWaiting())[0]), 'the call job')
    return job!
  }

  it('fencing: an attempt that skipped its begin writes nothing once another attempt began the call (its step and its landing are refused)', async () => {
    const redis = rigClient(hosts.url())
    hosts.defer(() => redis.disconnect())
    const log = new SessionLog(redis, uniquePrefix('marks-fence'), 's1')
    expect(await log.calls.requestCall('c1', 'safe', { n: 1 }, { harness: 'marks', fingerprint: callFingerprint('safe', { n: 1 }) })).toBe(
      'added',
    )
    expect(await log.calls.getCall('c1')).toMatchObject({
      status: 'running',
      epoch: 1,
      attempt: 1,
      replay: 'safe',
      owner: { harness: 'marks' },
    })
    const first = { toolCallId: 'c1', epoch: 1 }
    await log.calls.saveStep(first, 'a', 1, { type: 'harness.tool.step', toolCallId: 'c1', name: 'a', value: 1 })
    // a re-delivery (the first one stalled) begins as any job does: the call counts as cut
    const again = await log.calls.beginCall('c1', 'safe', 'safe', { harness: 'marks' })
    expect(again).toEqual({ kind: 'rerun', epoch: 2, attempt: 2 })
    await expect(
      log.calls.saveStep(first, 'b', 2, { type: 'harness.tool.step', toolCallId: 'c1', name: 'b', value: 2 }),
    ).rejects.toBeInstanceOf(FencedError)
    await expect(log.calls.landResult(first, 'safe', { result: { zombie: true } })).rejects.toBeInstanceOf(FencedError)
    await log.calls.landResult({ toolCallId: 'c1', epoch: 2 }, 'safe', { result: { n: 1 } })
    const all = await log.stream.read()
    expect(records(all, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(records(all, 'harness.tool.result').map((r) => r.result)).toEqual([{ n: 1 }])
    expect((await log.calls.getCall('c1'))?.result?.result).toEqual({ n: 1 })
  })

  it('a marked job whose data was edited before its first delivery runs its logged input: the mark fails, it begins as logged', async () => {
    ran.length = 0
    const { host, queue, startWorkers } = deployment('marks-edited')
    const session = host.open(harness, { sessionId: 'edited' })
    const result = session.runTool({ name: 'safe', input: { n: 7 } })
    const job = await waitingJob(queue('edited'))
    expect(typeof job.data.mark).toBe('string')
    await job.updateData({ ...job.data, input: { n: 666 } })
    startWorkers()
    expect(await result).toEqual({ n: 7 })
    expect(ran).toEqual([7])
    // its begin counted the call as cut (an attempt that skipped it may have run): replay is safe
    expect(records(await session.log.read(), 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'rerun'])
  })

  it("a mark copied onto another call's job does not verify there: that job begins as its own logged call", async () => {
    ran.length = 0
    const { host, queue, startWorkers } = deployment('marks-copied')
    const session = host.open(harness, { sessionId: 'copied' })
    const one = session.runTool({ name: 'safe', input: { n: 1 } })
    const first = await waitingJob(queue('copied'))
    const two = session.runTool({ name: 'safe', input: { n: 2 } })
    let second: Job | undefined
    await until(async () => !!(second = (await queue('copied').getWaiting()).find((j) => j.id !== first.id)), 'the second call job')
    await second!.updateData({ ...second!.data, mark: first.data.mark })
    startWorkers()
    expect(await Promise.all([one, two])).toEqual([{ n: 1 }, { n: 2 }])
    expect(ran.sort()).toEqual([1, 2])
    const started = records(await session.log.read(), 'harness.tool.started')
    expect(started.filter((r) => r.toolCallId === second!.data.toolCallId).map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(started.filter((r) => r.toolCallId === first.data.toolCallId).map((r) => r.reason)).toEqual(['fresh'])
  })

  it("R10: a replay 'never' tool's runTool call is not begun with its request: its job has no mark and begins first", async () => {
    const { host, queue, startWorkers } = deployment('marks-never')
    const session = host.open(harness, { sessionId: 'never' })
    const result = session.runTool({ name: 'never', input: { n: 3 } })
    const job = await waitingJob(queue('never'))
    expect(job.data.mark).toBeUndefined()
    expect(records(await session.log.read(), 'harness.tool.started')).toEqual([])
    startWorkers()
    expect(await result).toEqual({ n: 3 })
    expect(records(await session.log.read(), 'harness.tool.started')).toMatchObject([{ replay: 'never', reason: 'fresh', attempt: 1 }])
  })
})
