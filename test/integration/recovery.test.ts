import { toolDefinition } from '@tanstack/ai'
import { Job, Worker } from 'bullmq'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, type HarnessHost } from '../../src/index.js'
import { SessionLog, toolJobId, turnJobId } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { shop } from '../fixtures/shop.js'

import { batch, records, until } from '../helpers/log.js'
import { getRedisUrl, queuePrefix, rigClient, uniquePrefix } from '../rig.js'
import { quiet, useWorkerProcesses } from '../helpers/hosts.js'
import { patient } from '../helpers/patience.js'

const LOCK_LOST = 'attempt lost its job lock to another worker; it stopped before its next side effect and wrote nothing more'

describe('crash recovery over worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'recovery', workers: 0 })

  it("R10 R11: a cut batch keeps finished results, runs safe and durable calls again, gives other calls a tool error, keeps a never-tool's steps and records", async () => {
    const first = await ctx.spawn({ concurrency: 10 })
    ctx.workers.push(first)
    const session = ctx.host.open(shop, { sessionId: 'cut-batch' })
    const { inputId } = await session.prompt(
      batch([
        { name: 'lookup', input: { sku: 'quick' } },
        { name: 'checkout', input: { orderId: 'o1', pauseMs: 5000 } },
        { name: 'notify', input: { to: 'ann', pauseMs: 5000 } },
        { name: 'lookup', input: { sku: 'slow', pauseMs: 5000 } },
        { name: 'safeLookup', input: { sku: 'safe', pauseMs: 5000 } },
      ]),
    )
    // kill once the quick call landed and the others are inside their pause: the durable tools' steps
    // stored (not only their side effects made), notify's append staged (it is sent just after its
    // step: a kill between the two would leave no record to land), the plain tools' side effects made
    const stagedMail = new SessionLog(ctx.redis, ctx.prefix, 'cut-batch').calls.stagedKey('c0-2')
    await until(async () => {
      const billing = await ctx.redis.hgetall(`${ctx.prefix}:billing`)
      const entries = await session.log.read()
      const steps = records(entries, 'harness.tool.step').map((r) => `${r.toolCallId} ${r.name}`)
      return (
        records(entries, 'harness.tool.result').length === 1 &&
        steps.includes('c0-1 charge:o1') &&
        steps.includes('c0-2 send:ann') &&
        (await ctx.redis.llen(stagedMail)) === 1 &&
        !!billing['lookup|slow'] &&
        !!billing['safeLookup|safe']
      )
    }, 'the batch to be in flight')
    await first.kill('SIGKILL')
    ctx.workers.push(await ctx.spawn({ concurrency: 10 }))
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled.outcome).toBe('completed')
    const entries = await session.log.read()
    const results = Object.fromEntries(records(entries, 'harness.tool.result').map((r) => [r.toolCallId, r]))
    const billing = await ctx.redis.hgetall(`${ctx.prefix}:billing`)
    // finished call: kept, not run again
    expect(results['c0-0']).toMatchObject({ result: { sku: 'quick', stock: 3 } })
    expect(billing['lookup|quick']).toBe('1')
    // durableTool (safe): ran again, each step once
    expect(results['c0-1']).toMatchObject({ result: { chargeId: 'ch_o1' } })
    expect(billing['charge|cut-batch:c0-1:charge:o1']).toBe('1')
    expect(billing['invoice|cut-batch:c0-1:invoice:ch_o1']).toBe('1')
    // durableTool with replay 'never': tool error, not run again; its step and its records stay in the log
    expect(results['c0-2']).toMatchObject({ error: { code: 'interrupted' } })
    expect(results['c0-2'].error.message).toMatch(/may or may not have run/)
    expect(billing['mail|cut-batch:c0-2:send:ann']).toBe('1')
    expect(
      records(entries, 'harness.tool.step')
        .filter((r) => r.toolCallId === 'c0-2')
        .map((r) => r.name),
    ).toEqual(['send:ann'])
    const mailIndex = entries.findIndex((e) => e.record.type === 'app.mail')
    expect(entries[mailIndex + 1]!.record).toMatchObject({ type: 'harness.tool.result', toolCallId: 'c0-2' })
    // plain tool without replay: tool error, not run again
    expect(results['c0-3']).toMatchObject({ error: { code: 'interrupted' } })
    expect(billing['lookup|slow']).toBe('1')
    // plain tool marked replay 'safe': ran again
    expect(results['c0-4']).toMatchObject({ result: { sku: 'safe', stock: 5 } })
    expect(billing['safeLookup|safe']).toBe('2')
    // exactly one kept result per call
    expect(records(entries, 'harness.tool.result')).toHaveLength(5)
  })

  it('fencing end to end: a worker paused past its lock lands nothing after another worker took the call over', async () => {
    // the zombie must be the only worker when the call starts
    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    const zombie = await ctx.spawn({ concurrency: 1 })
    ctx.workers.push(zombie)
    const session = ctx.host.open(shop, { sessionId: 'zombie' })
    const run = session.runTool({ name: 'checkout', input: { orderId: 'z1', pauseMs: 1500 }, toolCallId: 'z-call' })
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    zombie.proc.kill('SIGSTOP')
    const rescuer = await ctx.spawn({ concurrency: 1 })
    ctx.workers.push(rescuer)
    expect(await run).toEqual({ chargeId: 'ch_z1' })
    const landed = await session.log.read()
    zombie.proc.kill('SIGCONT')
    // the zombie wakes inside its pause; before its invoice step it confirms its job lock, finds it
    // taken over and stops: the invoice is sent once, nothing more is written
    await zombie.waitFor((l) => l.toolCallId === 'z-call' && l.msg === LOCK_LOST)
    const after = await session.log.read()
    expect(after).toEqual(landed)
    const billing = await ctx.redis.hgetall(`${ctx.prefix}:billing`)
    expect(Object.entries(billing).filter(([k]) => k.startsWith('invoice|') && k.includes('z-call'))).toMatchObject([
      [expect.any(String), '1'],
    ])
    expect(records(after, 'harness.tool.result')).toHaveLength(1)
    expect(records(after, 'harness.tool.started').map((r) => r.attempt)).toEqual([1, 2])
  })

  it('fencing end to end: a zombie whose only write left is its landing stops before it (its job lock was taken over) and lands nothing', async () => {
    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    const zombie = await ctx.spawn({ concurrency: 1 })
    ctx.workers.push(zombie)
    const session = ctx.host.open(shop, { sessionId: 'zombie-land' })
    const run = session.runTool({ name: 'safeLookup', input: { sku: 'zl', pauseMs: 1500 }, toolCallId: 'zl-call' })
    for await (const { record } of session.log.follow({ types: ['harness.tool.started'] }))
      if (record.type === 'harness.tool.started') break
    zombie.proc.kill('SIGSTOP')
    const rescuer = await ctx.spawn({ concurrency: 1 })
    ctx.workers.push(rescuer)
    expect(await run).toEqual({ sku: 'zl', stock: 5 })
    const landed = await session.log.read()
    zombie.proc.kill('SIGCONT')
    // the zombie wakes inside its pause; before its result's hooks and landing it confirms its job lock,
    // finds it taken over and stops (were the lock lost after that check, the landing would be fenced)
    await zombie.waitFor((l) => l.toolCallId === 'zl-call' && l.msg === LOCK_LOST)
    const after = await session.log.read()
    expect(after).toEqual(landed)
    expect(records(after, 'harness.tool.result')).toHaveLength(1)
    expect(records(after, 'harness.tool.started').map((r) => r.attempt)).toEqual([1, 2])
  })
})

describe('the recovery sweeper', () => {
  let url: string
  const hosts: HarnessHost[] = []
  const closers: Array<() => Promise<unknown>> = []
  beforeAll(async () => {
    url = await getRedisUrl()
  })
  afterAll(async () => {
    for (const c of closers) await c()
    for (const h of hosts) await h.close()
  })
  const echo = durableTool(
    toolDefinition({ name: 'echo', description: 'echo', inputSchema: z.object({ text: z.string(), sleepMs: z.number().optional() }) }),
    async ({ text, sleepMs }, { step }) => {
      if (sleepMs) await step.sleep('wait', sleepMs)
      return { echo: text }
    },
  )
  const make = (label: string, durability = {}) => {
    const harness = defineHarness({
      name: label,
      adapter: scriptedModel([{ toolCalls: [{ name: 'echo', input: { text: 'hi', sleepMs: 60_000 } }] }, { text: 'done' }]),
      tools: [echo],
      durability,
    })
    const prefix = uniquePrefix(label)
    const host = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: quiet })
    hosts.push(host)
    return { harness, host, prefix }
  }
  const startWorkers = (host: HarnessHost) => {
    const w = host.startWorkers({ concurrency: 4, sweepEveryMs: 0 })
    closers.push(() => w.close())
    return w
  }

  it('settles a turn past timeoutMs that waits on a parked call', async () => {
    // long enough for the call to park first on a cold Cluster connection (test:cluster), short enough to wait out
    const { harness, host } = make('sweep-timeout', { timeoutMs: 1_500 })
    startWorkers(host)
    const session = host.open(harness, { sessionId: 's1' })
    const { inputId } = await session.prompt('go')
    await until(async () => records(await session.log.read(), 'harness.tool.suspended').length === 1, 'the call to park')
    await new Promise((r) => setTimeout(r, 1_600))
    const repairs = await host.sweep({ graceMs: 0 })
    expect(repairs).toEqual([{ kind: 'turn', sessionId: 's1', id: inputId, reason: 'turn past timeoutMs: settled as failed' }])
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'failed', error: { code: 'timeout' } })
    expect(records(await session.log.read(), 'harness.recovery')).toEqual([
      { type: 'harness.recovery', reason: 'turn past timeoutMs: settled as failed', inputId },
    ])
  })

  it('enqueues again a turn whose job vanished', async () => {
    const { harness, host, prefix } = make('sweep-turn')
    const session = host.open(harness, { sessionId: 's2' })
    const { inputId } = await session.prompt('go')
    const redis = rigClient(url)
    closers.push(async () => redis.disconnect())
    const q = (await import('bullmq')).Queue
    const turns = new q(`turns.${harness.name}`, { connection: redis, prefix: queuePrefix(prefix, 's2') })
    closers.push(() => turns.close())
    await (await Job.fromId(turns, turnJobId('s2', inputId)))!.remove()
    expect(await host.sweep({ graceMs: 0 })).toEqual([
      { kind: 'turn', sessionId: 's2', id: inputId, reason: 'turn job vanished: enqueued again' },
    ])
    expect(await host.sweep({ graceMs: 0 })).toEqual([])
    startWorkers(host)
    await until(
      async () => records(await session.log.read(), 'harness.tool.suspended').length === 1,
      'the re-enqueued turn to run its batch',
    )
  })

  it('repairs a batch logged with calls that have no job (a crash between the log write and the enqueue, and the turn job lost)', async () => {
    const { harness, host, prefix } = make('sweep-batch')
    const redis = rigClient(url)
    closers.push(async () => redis.disconnect())
    const log = new SessionLog(redis, prefix, 's5')
    // what a turn job left behind: its input and its model response with a batch, no job of any kind
    await log.inputs.addInput('in-5', 'go', harness.name)
    const logged = await log.inputs.logModelResponse(
      'in-5',
      {
        toolCalls: [
          { toolCallId: 'b1', name: 'echo', input: { text: 'one' } },
          { toolCallId: 'b2', name: 'echo', input: { text: 'two' } },
        ],
      },
      0,
    )
    expect(logged?.map((c) => c.toolCallId)).toEqual(['b1', 'b2'])
    expect(await host.sweep({ graceMs: 0 })).toEqual([
      { kind: 'turn', sessionId: 's5', id: 'in-5', reason: 'turn job vanished: enqueued again' },
    ])
    startWorkers(host)
    const session = host.open(harness, { sessionId: 's5' })
    // the scripted model's next answer is the text 'done': the turn ran the logged batch, then settled
    expect(await session.settled('in-5', { timeoutMs: patient(20_000) })).toEqual({ outcome: 'completed', text: 'done' })
    const results = records(await log.stream.read(), 'harness.tool.result').map((r) => [r.toolCallId, r.result])
    expect(results.sort()).toEqual([
      ['b1', { echo: 'one' }],
      ['b2', { echo: 'two' }],
    ])
    // the model was not asked for the batch again
    expect(records(await log.stream.read(), 'harness.model.response')).toHaveLength(2)
  })

  it('enqueues again a call a worker began whose job was then removed; it resumes where it was', async () => {
    const { harness, host, prefix } = make('sweep-real')
    startWorkers(host)
    const session = host.open(harness, { sessionId: 's4' })
    void session.runTool({ name: 'echo', input: { text: 'parked', sleepMs: 3_600_000 }, toolCallId: 'real' }).catch(() => {})
    const redis = rigClient(url)
    closers.push(async () => redis.disconnect())
    const log = new SessionLog(redis, prefix, 's4')
    await until(async () => (await log.calls.getCall('real'))?.status === 'parked', 'the call to park')
    const { Queue } = await import('bullmq')
    const tools = new Queue(toolQueueName(harness.name), { connection: redis, prefix: queuePrefix(prefix, 's4') })
    closers.push(() => tools.close())
    await (await Job.fromId(tools, toolJobId('s4', 'real')))!.remove()
    expect(await host.sweep({ graceMs: 0 })).toEqual([
      { kind: 'call', sessionId: 's4', id: 'real', reason: 'call job vanished: enqueued again' },
    ])
    // the new job resumes the call (not a cut): it parks again on the same logged wake time
    await until(async () => (await (await Job.fromId(tools, toolJobId('s4', 'real')))?.getState()) === 'delayed', 'the call to park again')
    const entries = await log.stream.read()
    expect(records(entries, 'harness.tool.sleep')).toHaveLength(1)
    expect(records(entries, 'harness.tool.suspended')).toHaveLength(2)
    expect(records(entries, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh'])
  })

  it('R10 a call whose job vanished behind more parked calls than a pass looks at is reached: passes go round the open calls', async () => {
    const { harness, host, prefix } = make('sweep-round')
    startWorkers(host)
    const session = host.open(harness, { sessionId: 's6' })
    const redis = rigClient(url)
    closers.push(async () => redis.disconnect())
    const log = new SessionLog(redis, prefix, 's6')
    // three parked calls, opened one after another: the one whose job vanishes is the newest
    for (const id of ['old-1', 'old-2', 'lost']) {
      void session.runTool({ name: 'echo', input: { text: id, sleepMs: 3_600_000 }, toolCallId: id }).catch(() => {})
      await until(async () => (await log.calls.getCall(id))?.status === 'parked', `${id} to park`)
      await new Promise((r) => setTimeout(r, 5))
    }
    const { Queue } = await import('bullmq')
    const tools = new Queue(toolQueueName(harness.name), { connection: redis, prefix: queuePrefix(prefix, 's6') })
    closers.push(() => tools.close())
    await (await Job.fromId(tools, toolJobId('s6', 'lost')))!.remove()
    // a pass of 2 looks at the two oldest (alive); the next one goes on from there and finds the lost one
    expect(await host.sweep({ graceMs: 0, limit: 2 })).toEqual([])
    expect(await host.sweep({ graceMs: 0, limit: 2 })).toEqual([
      { kind: 'call', sessionId: 's6', id: 'lost', reason: 'call job vanished: enqueued again' },
    ])
    await until(async () => (await (await Job.fromId(tools, toolJobId('s6', 'lost')))?.getState()) === 'delayed', 'the call to park again')
    // round again from the oldest: nothing more to repair
    expect(await host.sweep({ graceMs: 0, limit: 2 })).toEqual([])
    expect(await host.sweep({ graceMs: 0, limit: 2 })).toEqual([])
  })

  it('enqueues again a call whose job vanished, or failed, or completed without a result; two sweepers repair each once', async () => {
    const { harness, host, prefix } = make('sweep-call')
    const second = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: quiet })
    hosts.push(second)
    const redis = rigClient(url)
    closers.push(async () => redis.disconnect())
    const log = new SessionLog(redis, prefix, 's3')
    // three runTool calls a worker began and then lost: vanished job, failed job, job completed with no result
    for (const id of ['gone', 'failed', 'empty']) {
      await log.stream.append([{ type: 'harness.tool.requested', toolCallId: id, name: 'echo', input: { text: id } }])
      await log.calls.beginCall(id, 'echo', 'safe', { harness: harness.name })
    }
    const raw = new Worker(
      toolQueueName(harness.name),
      async (job) => {
        if (job.data.toolCallId === 'failed') throw new Error('redis went away')
      },
      { connection: rigClient(url, { maxRetriesPerRequest: null }), prefix: queuePrefix(prefix, 's3') },
    )
    closers.push(() => raw.close())
    const { Queue } = await import('bullmq')
    const tools = new Queue(toolQueueName(harness.name), { connection: redis, prefix: queuePrefix(prefix, 's3') })
    closers.push(() => tools.close())
    for (const id of ['failed', 'empty']) {
      await tools.add(
        'echo',
        { harness: harness.name, sessionId: 's3', toolCallId: id, name: 'echo', input: { text: id } },
        { jobId: toolJobId('s3', id) },
      )
    }
    await until(
      async () => (await tools.getJobCounts('failed', 'completed')).failed === 1 && (await tools.getJobCounts('completed')).completed === 1,
      'raw worker to fail and complete',
    )
    await raw.close()
    // two sweepers at once: each item repaired once
    const [a, b] = await Promise.all([host.sweep({ graceMs: 0 }), second.sweep({ graceMs: 0 })])
    const reasons = [...a, ...b].map((r) => `${r.id}: ${r.reason}`).sort()
    expect(reasons).toEqual([
      'empty: call job completed without a result: enqueued again',
      'failed: call job failed without a result: retried',
      'gone: call job vanished: enqueued again',
    ])
    startWorkers(host)
    for (const id of ['gone', 'failed', 'empty']) {
      await until(async () => (await log.calls.getCall(id))?.status === 'done', `call ${id} to land`)
      expect((await log.calls.getCall(id))!.result).toMatchObject({ result: { echo: id } })
    }
    expect(records(await log.stream.read(), 'harness.recovery')).toHaveLength(3)
    expect(await host.sweep({ graceMs: 0 })).toEqual([])
  })
})
