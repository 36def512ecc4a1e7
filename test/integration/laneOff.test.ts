// The local lane off (createHarnessHost({ localLane: false }), DH_LOCAL_LANE=off): every job goes through
// BullMQ's public path (Queue.add, plain Worker fetches), every landing through the PUBLISH.
import { describe, expect, it } from 'vitest'
import { defineHarness } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { indexKeys, messageKey } from '../../src/log/index.js'
import { EagerStartWorker } from '../../src/lane/bullmqInternals.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { lockOfTool } from '../helpers/lockOf.js'
import { records, until } from '../helpers/log.js'
import { rigClient } from '../rig.js'

describe('the local lane off', () => {
  const hosts = useInProcessHosts()

  it("a runTool call is added and fetched by BullMQ's own worker, and its landing is PUBLISHed though its caller is here", async () => {
    const locks: string[] = []
    const client = rigClient(hosts.url())
    hosts.defer(() => client.disconnect())
    const lockOf = lockOfTool(
      () => client,
      () => ({ prefix, harness: 'laneOff', sessionId: 'o1' }),
      locks,
    )
    const harness = defineHarness({ name: 'laneOff', adapter: scriptedModel([]), tools: [lockOf] })
    const { host, prefix, url } = hosts.start(harness, 'lane-off', { localLane: false })
    const subscriber = rigClient(url)
    hosts.defer(() => subscriber.disconnect())
    const heard: string[] = []
    subscriber.on('message', (_channel: string, message: string) => heard.push(message.split('\n')[0]!))
    await subscriber.subscribe(indexKeys(prefix, 0, 1).events)
    const session = host.open(harness, { sessionId: 'o1' })
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(await session.runTool({ name: 'lockOf', input: {} })).toEqual({ ok: true })
    }
    // BullMQ's fetch token (`<worker id>:<n>`), never a lane's start or fetch-behind token
    expect(locks).toHaveLength(3)
    for (const lock of locks) expect(lock).not.toMatch(/:(start|now)\d+$/)
    const keys = records(await session.log.read(), 'harness.tool.requested').map((r) => messageKey('call', 'o1', String(r.toolCallId)))
    await until(async () => keys.every((key) => heard.includes(key)), 'a PUBLISH for each landing')
  })

  it('the tool workers are plain BullMQ workers', async () => {
    const harness = defineHarness({ name: 'laneOffWorkers', adapter: scriptedModel([]), tools: [] })
    const { host } = hosts.start(harness, 'lane-off-workers', { localLane: false })
    const workers = host.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
    hosts.defer(() => workers.close())
    expect(workers.workers.filter((w) => w instanceof EagerStartWorker)).toEqual([])
    const on = hosts.start(defineHarness({ name: 'laneOnWorkers', adapter: scriptedModel([]), tools: [] }), 'lane-on-workers', {
      localLane: true,
    })
    const onWorkers = on.host.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
    hosts.defer(() => onWorkers.close())
    expect(onWorkers.workers.filter((w) => w instanceof EagerStartWorker).length).toBeGreaterThan(0)
  })
})
