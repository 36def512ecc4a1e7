// End-to-end turn latency with a scripted model: prompt -> settled for a turn whose first model call
// asks for a batch of 3 durable calls (one step each) and whose second answers. Against the sum of its
// Redis round trips: the client commands one turn sends (MONITOR, idle traffic subtracted; a
// MULTI…EXEC block is one; the 3 child jobs, pipelined by addBulk, count 3) times a PING round trip
// measured in the same run.
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, pingSamples, profileCommands, silentLogger, stderrProgress, summarize } from './lib.js'
import type { CommandProfile, Progress, Summary } from './lib.js'

const CALLS = 3

const one = durableTool(
  toolDefinition({ name: 'one', description: 'One trivial step', inputSchema: z.object({}) }),
  async (_input, { step }) => ({ v: await step.do('a', async () => 1) }),
)
const turnHarness = defineHarness({
  name: 'bench-turn',
  adapter: scriptedModel([{ toolCalls: Array.from({ length: CALLS }, () => ({ name: 'one', input: {} })) }, { text: 'done' }]),
  tools: [one],
})

export interface TurnResult {
  calls: number
  turn: Summary
  ping: Summary
  profile: CommandProfile
  /** commandsPerOp x PING p50, ms: the turn's Redis commands as if each were one round trip, one after another. */
  roundTripSumMs: number
}

export async function measureTurn(redisUrl: string, options: { quick?: boolean; progress?: Progress } = {}): Promise<TurnResult> {
  const progress = options.progress ?? stderrProgress
  const prefix = benchPrefix('turn')
  const host = createHarnessHost({ redis: redisUrl, harnesses: [turnHarness], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 10, sweepEveryMs: 0 })
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null })
  let n = 0
  const turn = async () => {
    const session = host.open(turnHarness, { sessionId: `t${n++}` })
    const { inputId } = await session.prompt('go')
    const settled = await session.settled(inputId, { timeoutMs: 30_000 })
    if (settled.outcome !== 'completed') throw new Error(`turn bench: settled ${JSON.stringify(settled)}`)
  }
  try {
    progress('[turn] warm-up')
    for (let i = 0; i < 30; i++) await turn()
    const rounds = 5
    const perRound = options.quick ? 10 : 60
    const times: number[] = []
    const pings: number[] = []
    for (let r = 0; r < rounds; r++) {
      progress(`[turn] round ${r + 1}/${rounds}: ${perRound} turns of a ${CALLS}-call batch, one at a time; 500 PINGs`)
      pings.push(...(await pingSamples(redis, 500)))
      for (let i = 0; i < perRound; i++) {
        const t0 = performance.now()
        await turn()
        times.push(performance.now() - t0)
      }
    }
    progress('[turn] command profile of one turn (MONITOR)')
    const profile = await profileCommands(redisUrl, prefix, options.quick ? 10 : 30, turn)
    const ping = summarize(pings)
    return { calls: CALLS, turn: summarize(times), ping, profile, roundTripSumMs: profile.commandsPerOp * ping.p50 }
  } finally {
    redis.disconnect()
    await workers.close()
    await host.close()
    await deletePrefix(redisUrl, prefix)
  }
}
