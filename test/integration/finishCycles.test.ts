// turn.beforeFinish and maxFinishCycles (issue 25, point 4): a model that stops before the job is done
// is sent back to work; the added messages are a logged cycle (harness.turn.finish), so a crash neither
// repeats nor loses one; ephemeral messages reach only the next model call and are never stored.
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { existsSync, rmSync } from 'node:fs'
import { finishFile, finisher, hookRuns } from '../fixtures/finish.js'
import { useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

const post = toolDefinition({ name: 'post_message', description: 'Posts', inputSchema: z.object({ text: z.string() }) }).server(
  () => 'posted',
)
const text = (messages: ModelMessage[]) => messages.map((m) => `${m.role}:${typeof m.content === 'string' ? m.content : ''}`)

describe('turn.beforeFinish in process', () => {
  const hosts = useInProcessHosts()

  it("sends a model that stopped back to work: the cycle's messages are logged and every later call sees them; ephemeral ones reach only the next call and are never stored", async () => {
    const seen: string[][] = []
    const harness = defineHarness({
      name: 'reminded',
      adapter: scriptedModel([
        ({ messages }) => (seen.push(text(messages)), { text: 'All done.' }),
        ({ messages }) => (seen.push(text(messages)), { toolCalls: [{ name: 'post_message', input: { text: 'hi' } }] }),
        ({ messages }) => (seen.push(text(messages)), { text: 'Posted.' }),
      ]),
      tools: [post],
      turn: {
        beforeFinish: ({ messages, cycle }) =>
          messages.some((m) => m.role === 'tool') || cycle > 0
            ? undefined
            : { messages: [{ role: 'user', content: 'Call post_message.' }], ephemeral: [{ role: 'user', content: 'EPHEMERAL hint' }] },
      },
    })
    const { host } = hosts.start(harness, 'finish-cycle')
    const session = host.open(harness, { sessionId: 'remind' })
    const { inputId } = await session.prompt('post hi')
    expect(await session.settled(inputId)).toEqual({ outcome: 'completed', text: 'Posted.' })
    expect(seen[1]).toEqual(['user:post hi', 'assistant:All done.', 'user:Call post_message.', 'user:EPHEMERAL hint'])
    expect(seen[2]!.slice(0, 3)).toEqual(['user:post hi', 'assistant:All done.', 'user:Call post_message.'])
    expect(seen[2]!.join('\n')).not.toContain('EPHEMERAL')
    const entries = await session.log.read()
    expect(records(entries, 'harness.turn.finish')).toEqual([
      { type: 'harness.turn.finish', inputId, cycle: 1, responses: 1, messages: [{ role: 'user', content: 'Call post_message.' }] },
    ])
    expect(JSON.stringify(entries)).not.toContain('EPHEMERAL')
  })

  it('fails the turn with max_finish_cycles when beforeFinish still adds messages after maxFinishCycles cycles', async () => {
    let calls = 0
    const harness = defineHarness({
      name: 'stubborn',
      adapter: scriptedModel(Array.from({ length: 10 }, () => () => (calls++, { text: 'Done, really.' }))),
      turn: { beforeFinish: () => ({ messages: [{ role: 'user', content: 'Not yet.' }] }), maxFinishCycles: 2 },
    })
    const { host } = hosts.start(harness, 'finish-max')
    const session = host.open(harness, { sessionId: 'stubborn' })
    const { inputId } = await session.prompt('go')
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'failed', error: { code: 'max_finish_cycles' } })
    expect(calls).toBe(3)
    expect(records(await session.log.read(), 'harness.turn.finish').map((r) => r.cycle)).toEqual([1, 2])
  })
})

describe('turn.beforeFinish over worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'finish', harnesses: [finisher], module: 'test/fixtures/finish.ts', workers: 2 })

  it('a SIGKILL of the worker after a cycle was logged neither repeats nor loses it: the hook ran once for it, the model call is made again and the turn completes', async () => {
    const session = ctx.host.open(finisher, { sessionId: 'finish-kill' })
    const { inputId } = await session.prompt('post hello')
    expect(await session.settled(inputId, { timeoutMs: patient(60_000) })).toEqual({ outcome: 'completed', text: 'Posted.' })
    const entries = await session.log.read()
    expect(records(entries, 'harness.turn.finish')).toHaveLength(1)
    expect(records(entries, 'harness.tool.result')).toHaveLength(1)
    // once for the first stop (a cycle), once after the post (no cycle): never again for the logged cycle
    expect(hookRuns(ctx.prefix)).toBe(2)
    expect(existsSync(finishFile(ctx.prefix, 'killed'))).toBe(true) // the model call after the cycle did kill a worker
    for (const what of ['hook', 'killed'] as const) rmSync(finishFile(ctx.prefix, what), { force: true })
  })
})
