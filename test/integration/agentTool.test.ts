import { chat, streamToText } from '@tanstack/ai'
import { Job, Queue } from 'bullmq'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { childSessionId } from '../../src/call/index.js'
import { SessionLog, toolJobId } from '../../src/log/index.js'
import { bullPrefix, toolQueueName } from '../../src/queue/index.js'
import { boss, helper } from '../fixtures/agents.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

describe('agentTool over worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'agents', harnesses: [boss], module: 'test/fixtures/agents.ts', workers: 1 })
  let tools: Queue
  beforeAll(() => {
    tools = new Queue(toolQueueName('boss'), { connection: ctx.redis, prefix: bullPrefix(ctx.prefix, 0, 1) })
  })
  afterAll(() => tools.close())

  it("runs a harness as a tool: the child session's final answer is the call's result", async () => {
    const session = ctx.host.open(boss, { sessionId: 'plain-agent' })
    const { inputId } = await session.prompt('book a table')
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toEqual({
      outcome: 'completed',
      text: 'boss heard: helper did: book a table',
    })
    const child = ctx.host.open(helper, { sessionId: childSessionId('plain-agent', 'call-0-0') })
    expect((await child.log.read({ types: ['harness.input'] }))[0]!.record).toMatchObject({ text: 'book a table' })
  })

  it('R11: a cut agent tool call gets a tool error', async () => {
    const log = new SessionLog(ctx.redis, ctx.prefix, 'cut-agent')
    // a worker began the (logged) call and died before it parked
    await log.calls.requestCall('a1', 'helper', { prompt: 'book' })
    await log.calls.beginCall('a1', 'helper', 'never', { harness: 'boss' })
    await tools.add(
      'helper',
      { harness: 'boss', sessionId: 'cut-agent', toolCallId: 'a1', name: 'helper', input: { prompt: 'book' } },
      { jobId: toolJobId('cut-agent', 'a1') },
    )
    await until(async () => (await log.calls.getCall('a1'))?.status === 'done', 'the cut call to land')
    expect((await log.calls.getCall('a1'))!.result).toMatchObject({ error: { code: 'interrupted' } })
    // no child was started for it
    expect(await new SessionLog(ctx.redis, ctx.prefix, childSessionId('cut-agent', 'a1')).inputs.getInput('agent-call')).toBeNull()
  })

  it('R11: a cut agent tool call whose child waits for a person keeps its place and goes on after the answer', async () => {
    const session = ctx.host.open(boss, { sessionId: 'asking-agent' })
    const { inputId } = await session.prompt('please ask first')
    const child = ctx.host.open(helper, { sessionId: childSessionId('asking-agent', 'call-0-0') })
    await until(async () => (await child.questions()).length === 1, "the child's question")
    const log = new SessionLog(ctx.redis, ctx.prefix, 'asking-agent')
    await until(async () => (await log.calls.getCall('call-0-0'))?.status === 'parked', 'the agent call to park')
    // a worker woke the parked call and died mid-attempt: the next attempt sees a cut
    expect((await log.calls.beginCall('call-0-0', 'helper', 'never')).kind).toBe('resume')
    await (await Job.fromId(tools, toolJobId('asking-agent', 'call-0-0')))!.promote()
    await until(
      async () =>
        (await log.stream.read({ types: ['harness.tool.started'] })).some((e) => (e.record as { reason?: string }).reason === 'cut'),
      'the cut attempt',
    )
    await until(async () => (await log.calls.getCall('call-0-0'))?.status === 'parked', 'the call to keep its place (parked again)')
    expect((await log.calls.getCall('call-0-0'))!.result).toBeUndefined()
    const [question] = await child.questions()
    await child.answer(question!.questionId, { ok: true })
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toEqual({
      outcome: 'completed',
      text: 'boss heard: helper after asking: confirmed',
    })
  })
})

describe('agentTool in plain chat()', () => {
  it('runs the child harness inline', async () => {
    const text = await streamToText(
      chat({ adapter: boss.adapter, messages: [{ role: 'user', content: 'wave' }], tools: [...boss.tools] } as never) as never,
    )
    expect(text).toBe('boss heard: helper did: wave')
  })
})

describe('abort of a turn whose agent call waits on its child', () => {
  const ctx = useWorkerProcesses({ label: 'agents-abort', harnesses: [boss], module: 'test/fixtures/agents.ts', workers: 1 })

  it('the parent call lands cancelled, the child turn is aborted and its question closes', async () => {
    const session = ctx.host.open(boss, { sessionId: 'abort-agent' })
    const { inputId } = await session.prompt('please ask first')
    const child = ctx.host.open(helper, { sessionId: childSessionId('abort-agent', 'call-0-0') })
    await until(async () => (await child.questions()).length === 1, "the child's question")
    const log = new SessionLog(ctx.redis, ctx.prefix, 'abort-agent')
    await until(async () => (await log.calls.getCall('call-0-0'))?.status === 'parked', 'the agent call to park')
    const [question] = await child.questions()
    expect(await session.abort(inputId, 'user left')).toBe(true)
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'aborted' })
    // the parent call: one cancelled result
    const results = (await log.stream.read({ types: ['harness.tool.result'] })).map((e) => e.record)
    expect(results).toEqual([expect.objectContaining({ toolCallId: 'call-0-0', error: expect.objectContaining({ code: 'cancelled' }) })])
    // the child: its turn aborted, its question closed and no longer answerable
    expect(await child.settled('agent-call')).toMatchObject({ outcome: 'aborted' })
    expect(await child.questions()).toEqual([])
    await expect(child.answer(question!.questionId, { ok: true })).rejects.toMatchObject({ name: 'QuestionClosedError' })
  })
})
