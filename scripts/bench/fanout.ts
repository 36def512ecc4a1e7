// Fan-out (issue 54, docs/fan-out.md), rows 11a and 11b: a durable tool fans out 1,000 child tool
// calls (ctx.tools.group) and collects them, against 1,000 session.runTool calls of the same tool from
// 20 callers, on the same host and Redis, rounds interleaved; and the Redis memory of a parked parent
// with 1,000 children each parked in step.waitForEvent (used_memory before and after, per child).
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, type HarnessHost } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, pause, pool, silentLogger, summarize, usedMemory, type Progress } from './lib.js'

const one = durableTool(
  toolDefinition({ name: 'one', description: 'One trivial step', inputSchema: z.object({ n: z.number(), wait: z.boolean().optional() }) }),
  async ({ n, wait }, { step }) => {
    if (wait) await step.waitForEvent({ name: 'go', event: 'bench.fanout', key: `k${n}`, timeout: '1h' })
    return step.do('a', async () => n)
  },
)
const fanner = durableTool(
  toolDefinition({ name: 'fanner', description: 'Fans out', inputSchema: z.object({ count: z.number(), wait: z.boolean().optional() }) }),
  async ({ count, wait }, { tools }) => {
    const group = tools.group()
    await Promise.all(Array.from({ length: count }, (_, n) => group.start(one, { n, ...(wait ? { wait } : {}) }, { name: `c${n}` })))
    return (await group.settled()).length
  },
)
const harness = defineHarness({
  name: 'bench-fanout',
  adapter: scriptedModel([]),
  tools: [one, fanner],
  subagents: { limits: { maxConcurrent: 10_000, maxCalls: 10_000 } },
})

export interface FanoutResult {
  children: number
  /** Median ms of one fan-out of `children` and of `children` runTool calls from 20 callers. */
  fanoutMs: number
  runToolMs: number
  rounds: number
  /** used_memory per child of a parked parent whose children wait parked (B). */
  bytesPerChild: number
}

let sessions = 0
const fanOut = async (host: HarnessHost, count: number, wait = false) =>
  host.open(harness, { sessionId: `fan-${++sessions}` }).runTool({ name: 'fanner', input: { count, ...(wait ? { wait } : {}) } })

export async function measureFanout(url: string, options: { quick: boolean; progress: Progress }): Promise<FanoutResult> {
  const children = 1_000
  const rounds = options.quick ? 2 : 4
  const prefix = benchPrefix('fanout')
  const host = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 20, sweepEveryMs: 0 })
  const redis = new Redis(url)
  const fan: number[] = []
  const run: number[] = []
  try {
    await host.ready()
    await fanOut(host, 100)
    await pool(200, 20, (i) => host.open(harness, { sessionId: `warm-${i % 20}` }).runTool({ name: 'one', input: { n: i } }))
    for (let r = 0; r < rounds; r++) {
      let t0 = performance.now()
      await fanOut(host, children)
      fan.push(performance.now() - t0)
      t0 = performance.now()
      await pool(children, 20, (i) => host.open(harness, { sessionId: `run-${r}-${i % 20}` }).runTool({ name: 'one', input: { n: i } }))
      run.push(performance.now() - t0)
      options.progress(`[bench] fanout round ${r + 1}: fan-out ${fan.at(-1)!.toFixed(0)} ms, runTool ${run.at(-1)!.toFixed(0)} ms`)
    }
    // 11b: a parent parked with 1,000 children parked in step.waitForEvent
    await pause(500)
    const before = await usedMemory(redis)
    const sessionId = `fan-${sessions + 1}`
    void fanOut(host, children, true).catch(() => {})
    const timers = async () => {
      let n = 0
      for (const key of await redis.keys(`${prefix}:*event-timers`)) n += await redis.zcard(key)
      return n
    }
    const deadline = Date.now() + 120_000
    while ((await timers()) < children && Date.now() < deadline) await pause(200)
    await pause(500)
    const after = await usedMemory(redis)
    options.progress(`[bench] fanout parked: ${await timers()} children waiting in session ${sessionId}, used_memory +${after - before} B`)
    return {
      children,
      fanoutMs: summarize(fan).p50,
      runToolMs: summarize(run).p50,
      rounds,
      bytesPerChild: (after - before) / children,
    }
  } finally {
    await workers.close()
    await host.close()
    redis.disconnect()
    await deletePrefix(url, prefix)
  }
}
