// A worker whose event loop blocks past its job lock (a zombie) must not run its next step's side
// effect once another worker took the call over: fencing refuses its write, but too late for a side
// effect that already ran. Before a step's fn starts, the attempt confirms it still holds its lock
// (for free while the lock is surely held; with one extendLock when it is in doubt) and stops if not.
import { toolDefinition } from '@tanstack/ai'
import { Job } from 'bullmq'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { lockLoss, lockLossKeys } from '../fixtures/lockLoss.js'
import { useInProcessHosts, useWorkerProcesses } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

const LOCK_LOST = 'attempt lost its job lock to another worker; it stopped before its next side effect and wrote nothing more'
const SUPERSEDED = 'attempt was superseded by a newer one; it wrote nothing more'

describe('a worker whose event loop blocks past its job lock', () => {
  const ctx = useWorkerProcesses({ label: 'lock-loss', harnesses: [lockLoss], module: 'test/fixtures/lockLoss.ts', workers: 0 })

  it("fencing (DESIGN §3): a zombie runs no step after another worker took its call over: step b's side effect runs once, the result lands once", async () => {
    const keys = lockLossKeys(ctx.prefix)
    await ctx.redis.del(keys.go)
    // the blocking process must be the only one when the call starts
    const zombie = await ctx.spawn({ concurrency: 1, env: { BLOCK_LOOP_MS: '3000' } })
    ctx.workers.push(zombie)
    const session = ctx.host.open(lockLoss, { sessionId: 'blocked' })
    const run = session.runTool({ name: 'twoSteps', input: {}, toolCallId: 'blocked-call' }, { timeoutMs: patient(60_000) })
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    const rescuer = await ctx.spawn({ concurrency: 1 })
    ctx.workers.push(rescuer)
    // the zombie blocks 3 × lockMs: the rescuer's stalled check takes the job and runs the call again
    await ctx.redis.set(keys.go, '1')
    expect(await run).toEqual({ b: 1 })
    // the zombie wakes between its steps and ends its attempt without running step b
    const ended = await zombie.waitFor((l) => l.toolCallId === 'blocked-call' && (l.msg === LOCK_LOST || l.msg === SUPERSEDED), 20_000)
    expect(await ctx.redis.get(keys.b)).toBe('1')
    expect(ended.msg).toBe(LOCK_LOST)
    expect(ended).toMatchObject({ level: 40, sessionId: 'blocked', attempt: 1, err: { code: 'lock_lost' } })
    const entries = await session.log.read()
    expect(records(entries, 'harness.tool.result')).toMatchObject([{ toolCallId: 'blocked-call', result: { b: 1 } }])
    expect(records(entries, 'harness.tool.started').map((r) => r.attempt)).toEqual([1, 2])
    expect(records(entries, 'harness.tool.step').map((r) => r.name)).toEqual(['a', 'b'])
  }, 180_000)

  it("fencing (DESIGN §3) and R10: a zombie of a replay 'never' call runs no step after the takeover; the new attempt lands the interrupted error, step b never runs", async () => {
    const keys = lockLossKeys(ctx.prefix)
    await Promise.all(ctx.workers.splice(0).map((w) => w.kill('SIGKILL')))
    await ctx.redis.del(keys.go)
    const zombie = await ctx.spawn({ concurrency: 1, env: { BLOCK_LOOP_MS: '3000' } })
    ctx.workers.push(zombie)
    const session = ctx.host.open(lockLoss, { sessionId: 'blocked-never' })
    const run = session.runTool({ name: 'twoStepsNever', input: {}, toolCallId: 'never-call' }, { timeoutMs: patient(60_000) })
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    ctx.workers.push(await ctx.spawn({ concurrency: 1 }))
    await ctx.redis.set(keys.go, '1')
    await expect(run).rejects.toMatchObject({ toolError: { code: 'interrupted' } })
    const ended = await zombie.waitFor((l) => l.toolCallId === 'never-call' && (l.msg === LOCK_LOST || l.msg === SUPERSEDED), 20_000)
    expect(await ctx.redis.get(keys.bNever)).toBeNull()
    expect(ended.msg).toBe(LOCK_LOST)
    const entries = await session.log.read()
    expect(records(entries, 'harness.tool.result')).toMatchObject([{ toolCallId: 'never-call', error: { code: 'interrupted' } }])
    expect(records(entries, 'harness.tool.step').map((r) => r.name)).toEqual(['a'])
  }, 180_000)
})

describe('a healthy worker confirms its lock for free', () => {
  const hosts = useInProcessHosts()

  it('steps of calls that outlast their lock several times over send no extendLock: the renewals keep each attempt sure of its lock', async () => {
    const nap = () => new Promise((resolve) => setTimeout(resolve, 400))
    const slow = durableTool(
      toolDefinition({ name: 'slow', description: 'five slow steps', inputSchema: z.object({ i: z.number() }) }),
      async ({ i }, { step }) => {
        let n = i
        for (const name of ['a', 'b', 'c', 'd', 'e']) n = await step.do(name, async () => (await nap(), n + 1))
        return n
      },
    )
    const harness = defineHarness({
      name: 'lockHot',
      adapter: scriptedModel([{ text: 'unused' }]),
      tools: [slow],
      durability: { lockMs: 1_000, stalledMs: 500 },
    })
    const { host } = hosts.start(harness, 'lock-hot', { concurrency: 10 })
    const extendLock = vi.spyOn(Job.prototype, 'extendLock')
    try {
      // each call runs about 2 s (2 × lockMs): its lock is renewed a few times under it
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => host.open(harness, { sessionId: `hot-${i}` }).runTool({ name: 'slow', input: { i } })),
      )
      expect(results).toEqual(Array.from({ length: 10 }, (_, i) => i + 5))
      expect(extendLock).not.toHaveBeenCalled()
    } finally {
      extendLock.mockRestore()
    }
  }, 60_000)
})
