// Replay cost against session log length. Each session's log is filled with valid app records
// (pipelined XADD), then one 3-step call runs once; a replay is beginCall (the call was 'running', so
// a rerun with a new epoch) plus its 3 step.do read back from the steps hash. Sizes are interleaved
// in rounds so a change of machine load hits all of them.
//
// For contrast (no target): a whole turn (prompt -> settled, one call) on a session of that length.
// The turn job folds the session log on every pass, so this one grows with the log.
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool } from '../../src/index.js'
import { SessionLog } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { createDurableContext, DEFAULT_MAX_VALUE_BYTES, SecretStore } from '../../src/tool/index.js'
import { benchPrefix, deletePrefix, silentLogger, stderrProgress, summarize, type Progress, type Summary } from './lib.js'

interface ReplaySize {
  entries: number
  replay: Summary
  /** A 1-call turn on a session of this length (undefined when not measured). */
  turn?: Summary
}

export interface ReplayResult {
  steps: number
  sizes: ReplaySize[]
}

const STEPS = 3
const FILLER = JSON.stringify({ type: 'app.filler', text: 'the quick brown fox jumps over the lazy dog', n: 42 })

const echo = durableTool(
  toolDefinition({ name: 'echo', description: 'One trivial step', inputSchema: z.object({}) }),
  async (_input, { step }) => ({ v: await step.do('a', async () => 1) }),
)
// every turn of a session sees its own earlier turns: model call 2k asks for the call, 2k+1 answers
const replayHarness = defineHarness({
  name: 'bench-replay',
  adapter: scriptedModel(
    Array.from({ length: 40 }, (_, k) => (k % 2 === 0 ? { toolCalls: [{ name: 'echo', input: {}, id: `echo-${k}` }] } : { text: 'done' })),
  ),
  tools: [echo],
})

async function fill(redis: Redis, key: string, entries: number): Promise<void> {
  for (let i = 0; i < entries; i += 1000) {
    const p = redis.pipeline()
    for (let k = i; k < Math.min(entries, i + 1000); k++) p.xadd(key, '*', 'r', FILLER)
    await p.exec()
  }
}

export async function measureReplay(
  redisUrl: string,
  options: { quick?: boolean; sizes?: number[]; turnSizes?: number[]; progress?: Progress } = {},
): Promise<ReplayResult> {
  const progress = options.progress ?? stderrProgress
  const sizes = options.sizes ?? [100, 10_000, 100_000]
  const turnSizes = options.turnSizes ?? [100, 100_000]
  const rounds = 10
  const perRound = options.quick ? 30 : 150
  const prefix = benchPrefix('replay')
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null })
  const secrets = new SecretStore()
  const context = (log: SessionLog, epoch: number, fresh: boolean) =>
    createDurableContext({ log, fence: { toolCallId: 'c', epoch }, secrets, maxValueBytes: DEFAULT_MAX_VALUE_BYTES, fresh })
  try {
    const logs = new Map<number, SessionLog>()
    for (const entries of sizes) {
      progress(`[replay] filling a session log with ${entries} entries`)
      const log = new SessionLog(redis, prefix, `r${entries}`)
      await fill(redis, log.stream.keys.log, entries)
      const begin = await log.calls.beginCall('c', 'bench', 'safe')
      const ctx = context(log, begin.epoch, true)
      for (let s = 0; s < STEPS; s++) await ctx.fields.step.do(`s${s}`, async () => ({ s }))
      logs.set(entries, log)
    }
    const replayOnce = async (log: SessionLog) => {
      const t0 = performance.now()
      const begin = await log.calls.beginCall('c', 'bench', 'safe')
      if (begin.kind !== 'rerun') throw new Error(`replay bench: expected a rerun, got ${begin.kind}`)
      const ctx = context(log, begin.epoch, false)
      for (let s = 0; s < STEPS; s++) {
        await ctx.fields.step.do(`s${s}`, async () => {
          throw new Error('replay bench: a stored step ran its fn')
        })
      }
      return performance.now() - t0
    }
    const samples = new Map<number, number[]>(sizes.map((s) => [s, []]))
    for (const log of logs.values()) for (let i = 0; i < 50; i++) await replayOnce(log) // warm-up
    for (let r = 0; r < rounds; r++) {
      progress(`[replay] round ${r + 1}/${rounds}: ${perRound} replays (beginCall + ${STEPS} stored steps) at ${sizes.join(', ')} entries`)
      for (const [entries, log] of logs) for (let i = 0; i < perRound; i++) samples.get(entries)!.push(await replayOnce(log))
    }
    const result: ReplayResult = {
      steps: STEPS,
      sizes: sizes.map((entries) => ({ entries, replay: summarize(samples.get(entries)!) })),
    }

    // ---- contrast: a whole turn on a long session ----
    const host = createHarnessHost({ redis: redisUrl, harnesses: [replayHarness], prefix, logger: silentLogger })
    const workers = host.startWorkers({ concurrency: 10, sweepEveryMs: 0 })
    try {
      const turns = options.quick ? 2 : 5
      for (const entries of turnSizes) {
        progress(`[replay] ${turns} turns (1 call each) on a session of ${entries} entries`)
        const session = host.open(replayHarness, { sessionId: `t${entries}` })
        await fill(redis, new SessionLog(redis, prefix, `t${entries}`).stream.keys.log, entries)
        const times: number[] = []
        for (let i = 0; i < turns + 1; i++) {
          const t0 = performance.now()
          const { inputId } = await session.prompt('go')
          const settled = await session.settled(inputId, { timeoutMs: 120_000 })
          if (settled.outcome !== 'completed') throw new Error(`replay bench: turn settled ${JSON.stringify(settled)}`)
          // the first turn warms up; on the filled log (raw XADDs, no projection) it also fills in the
          // session's conversation projection from the log, once
          if (i > 0) times.push(performance.now() - t0)
        }
        const size = result.sizes.find((s) => s.entries === entries)
        if (size) size.turn = summarize(times)
        else result.sizes.push({ entries, replay: summarize([NaN]), turn: summarize(times) })
      }
    } finally {
      await workers.close()
      await host.close()
    }
    return result
  } finally {
    redis.disconnect()
    await deletePrefix(redisUrl, prefix)
  }
}
