// A new runTool call of a process with a tool lane starts in its request's own write (startCall.lua,
// EagerStartWorker.reserveStart): its job is made active under a slot the lane holds for it.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { indexKeys, messageKey, toolJobId } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { quiet, useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { lockOfTool } from '../helpers/lockOf.js'
import { spawnWorker } from '../helpers/workerProcess.js'
import { records, until } from '../helpers/log.js'
import { queuePrefix, rigClient } from '../rig.js'

const onCluster = Boolean(process.env.REDIS_CLUSTER_NODES)
// the local lane off (DH_LOCAL_LANE=off, the lane-off run of this suite): what is the lane's own is skipped
const laneOff = process.env.DH_LOCAL_LANE === 'off'

/** A tool that holds its call until `release` (one gate a call id), counting its runs. */
function gatedTool() {
  const gates = new Map<string, () => void>()
  const runs: string[] = []
  const tool = durableTool(
    toolDefinition({ name: 'gated', description: 'waits for its gate', inputSchema: z.object({ id: z.string() }) }),
    async ({ id }, { step }) => {
      runs.push(id)
      await step.do('held', () => new Promise<number>((resolve) => gates.set(id, () => resolve(1))))
      return { id }
    },
  )
  const release = (id: string) => until(async () => gates.has(id), `call ${id} running`).then(() => gates.get(id)!())
  return { tool, runs, release }
}

describe('a runTool call started in its request write', () => {
  const hosts = useInProcessHosts()

  it.skipIf(onCluster)('a paused queue: the call waits in the queue until the harness is resumed, then runs once', async () => {
    const { tool, runs, release } = gatedTool()
    const harness = defineHarness({ name: 'startPaused', adapter: scriptedModel([]), tools: [tool] })
    const { host, prefix } = hosts.start(harness, 'start-paused')
    const session = host.open(harness, { sessionId: 'p1' })
    const warm = session.runTool({ name: 'gated', input: { id: 'warm' } })
    await release('warm')
    await warm
    await host.pause(harness.name)
    const call = session.runTool({ name: 'gated', input: { id: 'held' } })
    const client = rigClient(hosts.url())
    hosts.defer(() => client.disconnect())
    const wait = `${queuePrefix(prefix, 'p1')}:${toolQueueName('startPaused')}:wait`
    await until(async () => (await client.llen(wait)) === 1, 'the job in the wait list')
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(runs).toEqual(['warm'])
    await host.resume(harness.name)
    await release('held')
    expect(await call).toEqual({ id: 'held' })
    expect(runs).toEqual(['warm', 'held'])
  })

  it.skipIf(onCluster || laneOff)(
    "a slot whose job's attempt ended counts as free: a caller that calls again as soon as its call landed starts on it",
    async () => {
      const locks: string[] = []
      const client = rigClient(hosts.url())
      hosts.defer(() => client.disconnect())
      const lockOf = lockOfTool(
        () => client,
        () => ({ prefix, harness: 'startEnding', sessionId: 'e1' }),
        locks,
      )
      const harness = defineHarness({ name: 'startEnding', adapter: scriptedModel([]), tools: [lockOf] })
      const { host, prefix } = hosts.start(harness, 'start-ending', { concurrency: 1 })
      const session = host.open(harness, { sessionId: 'e1' })
      // the first call may come before the lane fetches
      await session.runTool({ name: 'lockOf', input: {} })
      locks.length = 0
      // each call right as the one before landed: BullMQ's completion of that job is still on its way
      for (let i = 0; i < 5; i++) expect(await session.runTool({ name: 'lockOf', input: {} })).toEqual({ ok: true })
      expect(locks).toHaveLength(5)
      for (const lock of locks) expect(lock).toMatch(/:start\d+$/)
    },
  )

  it('every slot of the lanes taken: the call is added to the queue and runs when a slot frees', async () => {
    const { tool, runs, release } = gatedTool()
    const harness = defineHarness({ name: 'startFull', adapter: scriptedModel([]), tools: [tool] })
    const { host } = hosts.start(harness, 'start-full', { concurrency: 1 })
    const session = host.open(harness, { sessionId: 'f1' })
    const first = session.runTool({ name: 'gated', input: { id: 'first' } })
    await until(async () => runs.includes('first'), 'the first call running')
    const second = session.runTool({ name: 'gated', input: { id: 'second' } })
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(runs).toEqual(['first'])
    await release('first')
    await release('second')
    expect(await Promise.all([first, second])).toEqual([{ id: 'first' }, { id: 'second' }])
    const started = records(await session.log.read(), 'harness.tool.started')
    expect(started.map((r) => [r.attempt, r.reason])).toEqual([
      [1, 'fresh'],
      [1, 'fresh'],
    ])
  })
})

describe("a landing's PUBLISH goes out only when another process may wait for it", () => {
  const hosts = useInProcessHosts()

  it.skipIf(onCluster || laneOff)(
    'no PUBLISH for a call under an id its caller made here, where it runs; one for a call another process awaits, and for a caller-given id',
    async () => {
      const { tool, release } = gatedTool()
      const harness = defineHarness({ name: 'quietLanding', adapter: scriptedModel([]), tools: [tool] })
      const { host, prefix, url } = hosts.start(harness, 'quiet-landing')
      // a second host of the same deployment without workers: its calls run on the first host's lanes
      const caller = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: quiet })
      hosts.defer(() => caller.close())
      const subscriber = rigClient(url)
      hosts.defer(() => subscriber.disconnect())
      const heard: string[] = []
      subscriber.on('message', (_channel: string, message: string) => heard.push(message.split('\n')[0]!))
      await subscriber.subscribe(indexKeys(prefix, 0, 1).events)
      const run = async (from: typeof host, id: string, toolCallId?: string) => {
        const session = from.open(harness, { sessionId: 'q1' })
        const call = session.runTool({ name: 'gated', input: { id }, ...(toolCallId ? { toolCallId } : {}) })
        await release(id)
        expect(await call).toEqual({ id })
        const requested = records(await session.log.read(), 'harness.tool.requested').find((r) => (r.input as { id: string }).id === id)
        return messageKey('call', 'q1', String(requested!.toolCallId))
      }
      const here = await run(host, 'here')
      const elsewhere = await run(caller, 'elsewhere')
      const given = await run(host, 'given', 'given-id')
      await until(async () => heard.includes(elsewhere) && heard.includes(given), 'the two PUBLISHes')
      expect(heard).not.toContain(here)
    },
  )
})

describe.skipIf(laneOff)('a process that started a call in its request write dies', () => {
  const ctx = useWorkerProcesses({ label: 'start-killed', workers: 1 })

  it('R10: another worker runs the call again once its lock expires; each step ran once', async () => {
    const caller = await spawnWorker({ entry: 'test/fixtures/selfCaller.ts', module: 'sk1', redisUrl: ctx.url, prefix: ctx.prefix })
    const session = ctx.host.open((await import('../fixtures/shop.js')).shop, { sessionId: 'self-sk1' })
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    const [requested] = records(await session.log.read(), 'harness.tool.requested')
    const toolCallId = String(requested!.toolCallId)
    // started on the caller's own lane, in its request's write: the lock is that slot's token
    const lockKey = `${queuePrefix(ctx.prefix, 'self-sk1')}:${toolQueueName('shop')}:${toolJobId('self-sk1', toolCallId)}:lock`
    expect(await ctx.redis.get(lockKey)).toMatch(/:start\d+$/)
    await caller.kill('SIGKILL')
    await until(
      async () => records(await session.log.read(), 'harness.tool.result').length === 1,
      'the call landed by the other worker',
      30_000,
    )
    const [result] = records(await session.log.read(), 'harness.tool.result')
    expect(result).toMatchObject({ toolCallId, result: { chargeId: 'ch_sk1' } })
    const billing = await ctx.redis.hgetall(`${ctx.prefix}:billing`)
    const charges = Object.entries(billing).filter(([k]) => k.startsWith('charge|') && k.includes(toolCallId))
    const invoices = Object.entries(billing).filter(([k]) => k.startsWith('invoice|') && k.includes(toolCallId))
    expect(charges.map(([, n]) => n)).toEqual(['1'])
    expect(invoices.map(([, n]) => n)).toEqual(['1'])
    const started = records(await session.log.read(), 'harness.tool.started').filter((r) => r.toolCallId === toolCallId)
    expect(started.map((r) => [r.attempt, r.reason])).toEqual([
      [1, 'fresh'],
      [2, 'rerun'],
    ])
  })
})
