// Durable approvals (TanStack's needsApproval) over a real worker process: the call parks as a
// question of kind 'approval' until a person decides from any process; approved it runs once,
// denied or expired it is a tool error the model reads, and a crash while it waits loses nothing.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { Job, Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { createHarnessHost, defineHarness } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { SessionLog, toolJobId } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { queuePrefix, uniquePrefix } from '../rig.js'
import { scriptedModel } from '../../src/testing/index.js'
import { approvals, expiring, harnesses } from '../fixtures/approvals.js'
import { useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

describe('durable approvals over a worker process', () => {
  const ctx = useWorkerProcesses({ label: 'approvals', harnesses, module: 'test/fixtures/approvals.ts', workers: 1 })
  const transfers = async () => Number((await ctx.redis.get(`${ctx.prefix}:transfers`)) ?? 0)

  async function approvalOf(sessionId: string) {
    const session = ctx.other.open(approvals, { sessionId })
    let found: Awaited<ReturnType<typeof session.questions>>[number] | undefined
    await until(async () => !!(found = (await session.questions()).find((q) => q.kind === 'approval')), 'the approval question')
    return found!
  }

  it('a needsApproval call waits as an approval question; approved from another process after a worker crash, it runs once', async () => {
    const session = ctx.host.open(approvals, { sessionId: 'approve' })
    const before = await transfers()
    const { inputId } = await session.prompt('transfer:40')
    const question = await approvalOf('approve')
    expect(question).toMatchObject({ kind: 'approval', name: 'harness.approval', message: expect.stringContaining('transfer') })
    expect(question.schema).toMatchObject({ type: 'object', properties: { approved: { type: 'boolean' } } })
    // the call is parked: no worker holds it. Kill the worker anyway, and start another
    await ctx.workers[0]!.waitFor((l) => l.sessionId === 'approve' && l.msg === 'tool call parked')
    await ctx.workers.splice(0)[0]!.kill('SIGKILL')
    ctx.workers.push(await ctx.spawn())
    await ctx.other.open(approvals, { sessionId: 'approve' }).answer(question.questionId, { approved: true })
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toEqual({ outcome: 'completed', text: 'done: {"sent":40}' })
    expect((await transfers()) - before).toBe(1)
    expect(await session.questions()).toEqual([])
    const started = records(await session.log.read(), 'harness.tool.started')
    expect(started.map((r) => r.reason)).toEqual(['fresh']) // woken by the answer: a resume, never a cut (R14)
  })

  it('denied: the tool does not run and the model reads the denial with its reason', async () => {
    const session = ctx.host.open(approvals, { sessionId: 'deny' })
    const before = await transfers()
    const { inputId } = await session.prompt('transfer:9000')
    const question = await approvalOf('deny')
    await ctx.other.open(approvals, { sessionId: 'deny' }).answer(question.questionId, { approved: false, reason: 'too much' })
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled.text).toContain('A person denied this call: too much')
    expect(records(await session.log.read(), 'harness.tool.result')[0]).toMatchObject({ error: { code: 'approval_denied' } })
    expect((await transfers()) - before).toBe(0)
  })

  it('expired: nobody decides within approvalTimeoutMs, the call lands approval_expired and an answer after it is refused', async () => {
    const session = ctx.host.open(expiring, { sessionId: 'expire' })
    const before = await transfers()
    const { inputId } = await session.prompt('transfer:5')
    const settled = await session.settled(inputId, { timeoutMs: patient(30_000) })
    expect(settled.text).toContain('Nobody approved this call in time')
    const result = records(await session.log.read(), 'harness.tool.result')[0]
    expect(result).toMatchObject({ error: { code: 'approval_expired' } })
    const asked = records(await session.log.read(), 'harness.tool.ask')[0]!
    await expect(ctx.other.open(expiring, { sessionId: 'expire' }).answer(asked.questionId, { approved: true })).rejects.toMatchObject({
      name: 'QuestionClosedError',
    })
    expect((await transfers()) - before).toBe(0)
  })

  it('an answer that is not a decision is refused with the validation message and nothing is logged', async () => {
    const session = ctx.host.open(approvals, { sessionId: 'bad-answer' })
    await session.prompt('transfer:1')
    const question = await approvalOf('bad-answer')
    // the log is still until the call has parked (its question comes a moment before its park)
    await ctx.workers[0]!.waitFor((l) => l.sessionId === 'bad-answer' && l.msg === 'tool call parked')
    const before = await session.log.read()
    await expect(
      ctx.other.open(approvals, { sessionId: 'bad-answer' }).answer(question.questionId, { approved: 'yes' }),
    ).rejects.toMatchObject({
      name: 'InvalidAnswerError',
    })
    expect(await session.log.read()).toEqual(before)
    await session.answer(question.questionId, { approved: true })
  })
  it('a parked approval call whose job data is edited (job.updateData) runs, once approved, with its logged input in its own session', async () => {
    const session = ctx.host.open(approvals, { sessionId: 'edited' })
    await ctx.host.open(approvals, { sessionId: 'edited-victim' }).prompt('hello')
    const { inputId } = await session.prompt('transfer:40')
    const question = await approvalOf('edited')
    await ctx.workers[0]!.waitFor((l) => l.sessionId === 'edited' && l.msg === 'tool call parked')
    // what bull-board's "update data" does: the parked job's data, not the log
    const tools = new Queue(toolQueueName(approvals.name), { connection: { url: ctx.url }, prefix: queuePrefix(ctx.prefix, 'edited') })
    try {
      // once it is a delayed job: the park's own write of the job's data comes a moment after its log line
      let job = (await Job.fromId(tools, toolJobId('edited', question.toolCallId)))!
      await until(async () => (await job.getState()) === 'delayed', 'the approval call to be a delayed job')
      job = (await Job.fromId(tools, toolJobId('edited', question.toolCallId)))!
      await job.updateData({ ...job.data, sessionId: 'edited-victim', toolCallId: 'other', inputId: 'other', input: { amount: 9000 } })
    } finally {
      await tools.close()
    }
    expect(question.message).toContain('40') // what the approver sees is the logged input
    await ctx.other.open(approvals, { sessionId: 'edited' }).answer(question.questionId, { approved: true })
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toEqual({ outcome: 'completed', text: 'done: {"sent":40}' })
    // the tool ran once, with the logged input (another test's transfer may land meanwhile: not counted here)
    expect(records(await session.log.read(), 'harness.tool.result').map((r) => r.result)).toEqual([{ sent: 40 }])
    const warned = ctx.workers[0]!.lines.find((l) => l.sessionId === 'edited' && String(l.msg).includes('disagrees with the session log'))
    expect(warned).toMatchObject({
      toolCallId: question.toolCallId,
      fields: expect.arrayContaining(['sessionId', 'toolCallId', 'inputId', 'input']),
    })
    const victim = await ctx.host.open(approvals, { sessionId: 'edited-victim' }).log.read()
    expect(records(victim, 'harness.tool.result')).toEqual([])
    expect(records(victim, 'harness.tool.started')).toEqual([])
  })
})

describe('a tool job runs only its logged call', () => {
  const hosts = useInProcessHosts()
  const ran: unknown[] = []
  const pay = toolDefinition({ name: 'pay', description: 'x', inputSchema: z.object({ n: z.number() }) }).server(async ({ n }) => {
    ran.push(n)
    return { paid: n }
  })
  const harness = defineHarness({ name: 'logged-call', adapter: scriptedModel([]), tools: [pay] })

  /** A host with no workers (its calls wait in the queue), its workers started later, and a queue handle. */
  function deployment(label: string) {
    const warnings: Array<Record<string, unknown>> = []
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) })
    const prefix = uniquePrefix(label)
    const host = createHarnessHost({ redis: hosts.url(), harnesses: [harness], prefix, logger })
    hosts.defer(() => host.close())
    const tools = (sessionId: string) => {
      const queue = new Queue(toolQueueName(harness.name), { connection: { url: hosts.url() }, prefix: queuePrefix(prefix, sessionId) })
      hosts.defer(() => queue.close())
      return queue
    }
    const startWorkers = () => {
      const workers = host.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
      hosts.defer(() => workers.close())
    }
    return { host, prefix, tools, startWorkers, warnings }
  }

  it('a queued runTool call whose job data is edited (job.updateData) runs with its logged input; its result lands in its own session', async () => {
    ran.length = 0
    const { host, tools, startWorkers, warnings } = deployment('edited-queued')
    const session = host.open(harness, { sessionId: 'queued' })
    await host
      .open(harness, { sessionId: 'queued-victim' })
      .runTool({ name: 'pay', input: { n: 1 }, toolCallId: 'v1' }, { timeoutMs: 1 })
      .catch(() => {})
    const paid = session.runTool({ name: 'pay', input: { n: 7 }, toolCallId: 'p1' })
    const queue = tools('queued')
    let job: Job | undefined
    await until(async () => !!(job = await Job.fromId(queue, toolJobId('queued', 'p1'))), 'the call job')
    await job!.updateData({ ...job!.data, sessionId: 'queued-victim', toolCallId: 'v1', input: { n: 666 } })
    startWorkers()
    expect(await paid).toEqual({ paid: 7 })
    expect(ran).not.toContain(666)
    expect(warnings.find((w) => String(w.msg).includes('disagrees with the session log'))).toMatchObject({
      sessionId: 'queued',
      toolCallId: 'p1',
      fields: ['sessionId', 'toolCallId', 'input'],
    })
    const victim = host.open(harness, { sessionId: 'queued-victim' })
    await expect(victim.runTool({ name: 'pay', input: { n: 1 }, toolCallId: 'v1' })).resolves.toEqual({ paid: 1 })
    expect(records(await victim.log.read(), 'harness.tool.result')).toHaveLength(1)
    expect(ran.sort()).toEqual([1, 7])
  })

  it('a tool job added by hand for a call no log holds runs nothing and fails with CallNotLoggedError', async () => {
    ran.length = 0
    const { host, tools, startWorkers } = deployment('forged')
    const session = host.open(harness, { sessionId: 'forged' })
    await session.runTool({ name: 'pay', input: { n: 1 }, toolCallId: 'real' }, { timeoutMs: 1 }).catch(() => {})
    const queue = tools('forged')
    const forged = await queue.add(
      'pay',
      { sessionId: 'forged', toolCallId: 'made-up', input: { n: 999 } },
      { jobId: toolJobId('forged', 'made-up') },
    )
    startWorkers()
    await until(
      async () => /call_not_logged|no logged tool call/.test((await Job.fromId(queue, forged.id!))?.failedReason ?? ''),
      'the job to fail',
    )
    expect(ran).not.toContain(999)
    const log = await session.log.read()
    expect(records(log, 'harness.tool.started').map((r) => r.toolCallId)).not.toContain('made-up')
  })
})

describe('an approval cut before it parked', () => {
  const hosts = useInProcessHosts()

  it('a crash between asking and parking is no cut of the tool: the call asks on, and once approved its tool runs once', async () => {
    const ran: unknown[] = []
    const pay = toolDefinition({ name: 'pay', description: 'x', inputSchema: z.object({ n: z.number() }), needsApproval: true }).server(
      async ({ n }) => {
        ran.push(n)
        return { paid: n }
      },
    )
    const harness = defineHarness({ name: 'approval-cut', adapter: scriptedModel([]), tools: [pay] })
    const { host, prefix, url } = hosts.start(harness, 'approval-cut')
    const session = host.open(harness, { sessionId: 'cut' })
    const paid = session.runTool({ name: 'pay', input: { n: 7 }, toolCallId: 'p1' })
    await until(async () => records(await session.log.read(), 'harness.tool.suspended').length === 1, 'the call to park')
    // what a worker that died right after asking leaves: the call running under an attempt nobody
    // finishes. Its job then runs again (here: promoted) and begins a cut attempt
    const redis = new Redis(url)
    hosts.defer(() => redis.disconnect())
    expect((await new SessionLog(redis, prefix, 'cut').calls.beginCall('p1', 'pay', 'never', { harness: harness.name })).kind).toBe(
      'resume',
    )
    const tools = new Queue(toolQueueName(harness.name), { connection: { url }, prefix: queuePrefix(prefix, 'cut') })
    hosts.defer(() => tools.close())
    await (await Job.fromId(tools, toolJobId('cut', 'p1')))!.promote()
    await until(async () => records(await session.log.read(), 'harness.tool.suspended').length === 2, 'the call to park again')
    const [question] = await session.questions()
    await session.answer(question!.questionId, { approved: true })
    expect(await paid).toEqual({ paid: 7 })
    expect(ran).toEqual([7])
    const started = records(await session.log.read(), 'harness.tool.started').map((r) => r.reason)
    expect(started).toEqual(['fresh', 'cut']) // a resume logs no started record
  })
})

describe('TanStack tool options', () => {
  const hosts = useInProcessHosts()

  it('defineHarness refuses a tool option a durable harness does not support (lazy, approvalSchema), never ignoring it', () => {
    const base = { description: 'x', inputSchema: z.object({}) }
    const lazy = Object.assign(
      toolDefinition({ name: 'lazy', ...base }).server(async () => 1),
      { lazy: true },
    )
    expect(() => defineHarness({ name: 'lazy', adapter: scriptedModel([]), tools: [lazy] })).toThrow(ConfigError)
    const schema = Object.assign(
      toolDefinition({ name: 'schema', ...base }).server(async () => 1),
      { approvalSchema: z.object({}) },
    )
    expect(() => defineHarness({ name: 'schema', adapter: scriptedModel([]), tools: [schema] })).toThrow(/approvalSchema/)
  })

  it('outputSchema checks the result: one that does not fit is an invalid_tool_output tool error', async () => {
    const liar = toolDefinition({
      name: 'liar',
      description: 'x',
      inputSchema: z.object({}),
      outputSchema: z.object({ n: z.number() }),
    }).server(async () => ({ n: 'not a number' }) as never)
    const honest = toolDefinition({
      name: 'honest',
      description: 'x',
      inputSchema: z.object({}),
      outputSchema: z.object({ n: z.number() }),
    }).server(async () => ({
      n: 1,
    }))
    const harness = defineHarness({ name: 'outputs', adapter: scriptedModel([]), tools: [liar, honest] })
    const { host } = hosts.start(harness, 'outputs')
    const session = host.open(harness, { sessionId: 'o' })
    await expect(session.runTool({ name: 'liar', input: {} })).rejects.toMatchObject({ code: 'invalid_tool_output' })
    expect(await session.runTool({ name: 'honest', input: {} })).toEqual({ n: 1 })
  })
})
