// session.abort reaches parked work (issue 13, point 3): a turn's sleeping and asking calls land a
// 'cancelled' tool error once, their delayed jobs finish, their questions close. Over real worker
// processes running the shop fixture.
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { toolDefinition } from '@tanstack/ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool, QuestionClosedError, type Session } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { SessionLog, toolJobId } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { shop } from '../fixtures/shop.js'
import { useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { batch, records, until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

const THREE_DAYS = 3 * 24 * 3600 * 1000
const parkedTurn = batch([
  { name: 'nap', input: { ms: THREE_DAYS } },
  { name: 'approve', input: { amount: 5 } },
])

describe('abort ends the parked calls of its turn', () => {
  const ctx = useWorkerProcesses({ label: 'cancel', workers: 2 })
  let tools: Queue

  beforeAll(() => {
    tools = new Queue(toolQueueName(shop.name), {
      connection: new Redis(ctx.url, { maxRetriesPerRequest: null }),
      prefix: bullPrefix(ctx.prefix, 0, 1),
    })
  })
  afterAll(async () => {
    await tools?.close()
  })

  const resultsOf = async (s: Session, toolCallId: string) =>
    records(await s.log.read({ types: ['harness.tool.result'] }), 'harness.tool.result').filter((r) => r.toolCallId === toolCallId)
  const callIdsOf = async (s: Session) =>
    records(await s.log.read(), 'harness.model.response').flatMap(
      (r) => r.toolCalls.map((c: { toolCallId: string }) => c.toolCallId) as string[],
    )
  const jobState = async (s: Session, toolCallId: string) =>
    (await tools.getJob(toolJobId(s.sessionId, toolCallId)))?.getState() ?? 'missing'
  /** The nap (sleeping 3 days) and the approve (asking) of a fresh turn, both parked. */
  async function parkBoth(s: Session) {
    const { inputId } = await s.prompt(parkedTurn)
    await until(async () => records(await s.log.read(), 'harness.tool.suspended').length === 2, 'both calls to park')
    const [napId, approveId] = (await callIdsOf(s)) as [string, string]
    const [question] = await s.questions()
    return { inputId, napId, approveId, questionId: question!.questionId }
  }
  /** Each call's job ran its last time (it found the call done and completed): no delayed job is left. */
  const jobsFinished = (s: Session, ids: string[]) =>
    until(async () => (await Promise.all(ids.map((id) => jobState(s, id)))).every((st) => st === 'completed'), 'the call jobs to complete')

  it('abort ends a 3-day sleep and an open ask: each lands cancelled once, the delayed jobs are gone, the question closes and an answer is refused', async () => {
    const s = ctx.host.open(shop, { sessionId: 'cancel-parked' })
    const { inputId, napId, approveId, questionId } = await parkBoth(s)
    expect(await jobState(s, napId)).toBe('delayed')
    expect(await ctx.host.questions()).toMatchObject([{ questionId }])

    expect(await s.abort(inputId, 'user left')).toBe(true)
    expect(await s.settled(inputId)).toMatchObject({ outcome: 'aborted' })
    for (const id of [napId, approveId]) {
      expect(await resultsOf(s, id)).toEqual([
        expect.objectContaining({ error: { code: 'cancelled', message: expect.stringContaining('user left') } }),
      ])
    }
    expect(await s.questions()).toEqual([])
    expect((await ctx.host.questions()).filter((q) => q.sessionId === s.sessionId)).toEqual([])
    await expect(s.answer(questionId, { approved: true })).rejects.toBeInstanceOf(QuestionClosedError)
    await expect(s.answer(questionId, { approved: true })).rejects.toMatchObject({ code: 'question_closed' })

    await jobsFinished(s, [napId, approveId])
    const delayed = await tools.getDelayed()
    expect(delayed.filter((j) => j.data.sessionId === s.sessionId)).toEqual([])
    // the jobs ran once more and found the calls done: still one result each, no tool ran again
    for (const id of [napId, approveId]) expect(await resultsOf(s, id)).toHaveLength(1)
    expect(await ctx.redis.hgetall(`${ctx.prefix}:billing`)).toSatisfy((b: Record<string, string>) =>
      Object.entries(b)
        .filter(([k]) => k.startsWith('nap-before'))
        .every(([, n]) => n === '1'),
    )
    // aborting again changes nothing
    expect(await s.abort(inputId)).toBe(false)
    for (const id of [napId, approveId]) expect(await resultsOf(s, id)).toHaveLength(1)

    // the session keeps working
    const next = await s.prompt(batch([{ name: 'lookup', input: { sku: 'after-abort' } }]))
    expect(await s.settled(next.inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
  })

  it('an answer racing the abort, with a worker SIGKILLed around it: each call lands one result, cancelled or its own', async () => {
    const s = ctx.host.open(shop, { sessionId: 'cancel-race' })
    const { inputId, napId, approveId, questionId } = await parkBoth(s)
    const killed = ctx.workers.shift()!
    await Promise.all([killed.kill('SIGKILL'), s.answer(questionId, { approved: true }).catch(() => {}), s.abort(inputId, 'stop')])
    ctx.workers.push(await ctx.spawn())

    await until(async () => (await resultsOf(s, approveId)).length > 0 && (await resultsOf(s, napId)).length > 0, 'both calls to land')
    await jobsFinished(s, [napId, approveId])
    expect(await resultsOf(s, napId)).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'cancelled' }) })])
    const approved = await resultsOf(s, approveId)
    expect(approved).toHaveLength(1)
    expect([approved[0]!.error?.code, approved[0]!.result?.approved]).toSatisfy(
      ([code, ok]: [string | undefined, boolean | undefined]) => code === 'cancelled' || code === 'aborted' || ok === true,
    )
  })

  it('a cancel cut short by a crash of the aborting process (turn settled, calls still parked) is finished by the sweeper', async () => {
    const s = ctx.host.open(shop, { sessionId: 'cancel-crash' })
    const { inputId, napId, approveId, questionId } = await parkBoth(s)
    // what abort writes first; the process dies before it cancels the parked calls
    const log = new SessionLog(ctx.redis, ctx.prefix, s.sessionId)
    await log.inputs.settle({ type: 'harness.input.settled', inputId, outcome: 'aborted', error: { code: 'aborted', message: 'gone' } }, '')
    expect(await resultsOf(s, napId)).toEqual([])

    const repairs = await ctx.host.sweep({ graceMs: 0 })
    expect(repairs.filter((r) => r.sessionId === s.sessionId)).toEqual([
      expect.objectContaining({ kind: 'call', reason: 'parked call of a turn that aborted: cancelled' }),
    ])
    for (const id of [napId, approveId]) {
      expect(await resultsOf(s, id)).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'cancelled' }) })])
    }
    await expect(s.answer(questionId, { approved: true })).rejects.toMatchObject({ code: 'question_closed' })
    await jobsFinished(s, [napId, approveId])
  })
})

describe('a turn that fails ends its parked calls too', () => {
  const hosts = useInProcessHosts()

  it('a turn past its timeoutMs, settled failed by the sweeper, ends its 3-day sleep with a cancelled tool error', async () => {
    const sleeper = durableTool(
      toolDefinition({ name: 'sleeper', description: 'sleeps for days', inputSchema: z.object({}) }),
      async (_input, { step }) => {
        await step.sleep('days', THREE_DAYS)
        return 'woke'
      },
    )
    const harness = defineHarness({
      name: 'cancel-timeout',
      adapter: scriptedModel([{ toolCalls: [{ name: 'sleeper', input: {} }] }, { text: 'never' }]),
      tools: [sleeper],
      durability: { timeoutMs: 1_000 },
    })
    const { host } = hosts.start(harness, 'cancel-timeout')
    const s = host.open(harness, { sessionId: 'timed-out' })
    const { inputId } = await s.prompt('sleep')
    await until(async () => records(await s.log.read(), 'harness.tool.suspended').length === 1, 'the call to park')
    // the sweeper settles the turn past its timeoutMs, and ends the call it left parked
    await until(async () => (await host.sweep({ graceMs: 0 })).some((r) => r.kind === 'turn'), 'the sweeper to time the turn out')
    expect(await s.settled(inputId)).toMatchObject({ outcome: 'failed', error: { code: 'timeout' } })
    expect(records(await s.log.read(), 'harness.tool.result')).toEqual([
      expect.objectContaining({ name: 'sleeper', error: { code: 'cancelled', message: expect.stringContaining('timeoutMs') } }),
    ])
    // abort of the failed turn changes nothing and says so
    expect(await s.abort(inputId)).toBe(false)
  })
})
