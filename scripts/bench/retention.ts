// Redis memory per settled turn, without and with retention (docs/retention.md): `turns` sessions of
// one turn each (a 1-call batch, then an answer), all settled; used_memory before and after, divided
// by the turns. Without retention everything stays: the session's keys, and the turn's and its call's
// completed BullMQ jobs for a day. With retention (sessionMs 50 ms, completed jobs removed when they
// complete), one retention pass after the turns settle exports and removes the sessions; what is left
// is what no retention removes (BullMQ's capped events streams, the host's metadata).
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, type RetentionOptions } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, pause, pool, silentLogger } from './lib.js'
import type { Progress } from './lib.js'

const one = durableTool(
  toolDefinition({ name: 'one', description: 'One trivial step', inputSchema: z.object({}) }),
  async (_input, { step }) => ({ v: await step.do('a', async () => 1) }),
)
const harness = defineHarness({
  name: 'bench-retention',
  adapter: scriptedModel([{ toolCalls: [{ name: 'one', input: {} }] }, { text: 'done' }]),
  tools: [one],
})

export interface RetentionFigure {
  retention: boolean
  turns: number
  bytesPerSettledTurn: number
  /** Sessions the retention pass removed, and the bytes of JSON Lines it exported. */
  removed: number
  exportedBytes: number
}

const usedMemory = async (redis: Redis) => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1])

async function run(redisUrl: string, turns: number, retention: boolean, progress: Progress): Promise<RetentionFigure> {
  const prefix = benchPrefix(retention ? 'ret' : 'keep')
  let exportedBytes = 0
  const options: RetentionOptions = {
    sessionMs: 50,
    completedJobsMs: 0,
    export: (_sessionId, jsonl) => void (exportedBytes += jsonl.length),
  }
  const host = createHarnessHost({
    redis: redisUrl,
    harnesses: [harness],
    prefix,
    logger: silentLogger,
    ...(retention ? { retention: options } : {}),
  })
  const workers = host.startWorkers({ concurrency: 10, sweepEveryMs: 0 })
  const admin = new Redis(redisUrl)
  const turn = async (sessionId: string) => {
    const session = host.open(harness, { sessionId })
    const { inputId } = await session.prompt('go')
    const settled = await session.settled(inputId, { timeoutMs: 60_000 })
    if (settled.outcome !== 'completed') throw new Error(`retention bench: ${JSON.stringify(settled)}`)
  }
  try {
    await turn('warm') // queue metadata and loaded scripts are in the baseline
    await pause(300)
    await host.retain({ limit: 10 })
    const before = await usedMemory(admin)
    progress(`[retention] ${turns} sessions of one settled turn, retention ${retention ? 'on' : 'off'}`)
    await pool(turns, 50, (i) => turn(`s${i}`))
    let removed = 0
    if (retention) {
      await pause(100)
      for (let got = -1; got !== 0;) removed += got = (await host.retain({ limit: 1000 })).length
    }
    await pause(500)
    const after = await usedMemory(admin)
    return { retention, turns, bytesPerSettledTurn: Math.round((after - before) / turns), removed, exportedBytes }
  } finally {
    admin.disconnect()
    await workers.close()
    await host.close()
    await deletePrefix(redisUrl, prefix)
  }
}

export async function measureRetention(redisUrl: string, options: { quick?: boolean; progress: Progress }): Promise<RetentionFigure[]> {
  const turns = options.quick ? 300 : 2000
  return [await run(redisUrl, turns, false, options.progress), await run(redisUrl, turns, true, options.progress)]
}
