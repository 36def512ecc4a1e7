// Baseline and step cost: Redis PING round trip, durable step.do on its first run and replayed.
// The durable context is driven directly over a SessionLog (no BullMQ): beginCall, then step.do with
// fresh: true; beginCall again (the call was 'running': a rerun) and step.do with fresh: false reads
// the stored values. PING and steps are interleaved in rounds so a change of machine load hits both.
import { Redis } from 'ioredis'
import { encodeRecord, SessionLog, stepField } from '../../src/log/index.js'
import { runScript, scripts } from '../../src/log/commands/index.js'
import { createDurableContext, DEFAULT_MAX_VALUE_BYTES, SecretStore } from '../../src/tool/index.js'
import { benchPrefix, commandStats, deletePrefix, pingSamples, stderrProgress, summarize, type Progress, type Summary } from './lib.js'

export interface StepsResult {
  ping: Summary
  firstRun: Summary
  replay: Summary
  /** step.do first run with a retry policy whose first try succeeds (same rounds as firstRun). */
  firstRunWithRetry: Summary
  calls: number
  stepsPerCall: number
  /**
   * Where a step's time goes, each timed in the same rounds: a raw HGET of a stored step and
   * CallLedger.getStep (a replay's read), the raw saveStep script call with pre-encoded arguments and
   * CallLedger.saveStep (encodes and validates the record) — a first run's write.
   */
  parts: { hget: Summary; getStep: Summary; saveStepScript: Summary; saveStep: Summary }
  /** Redis-side µs per call (INFO commandstats over the measured rounds; private Redis only). */
  serverUsecPerCall?: Record<string, number>
}

const STEPS = 3

export interface StepsOptions {
  quick?: boolean
  /** REDIS_URL is shared: commandstats would count other clients' commands too. */
  sharedRedis?: boolean
  progress?: Progress
}

export async function measureSteps(redisUrl: string, options: StepsOptions = {}): Promise<StepsResult> {
  const progress = options.progress ?? stderrProgress
  const rounds = 10
  const callsPerRound = options.quick ? 40 : 200
  const pingsPerRound = options.quick ? 300 : 1500
  const prefix = benchPrefix('steps')
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null })
  const log = new SessionLog(redis, prefix, 'steps')
  const secrets = new SecretStore()
  const ping: number[] = []
  const first: number[] = []
  const replay: number[] = []
  const firstWithRetry: number[] = []
  const parts = { hget: [] as number[], getStep: [] as number[], saveStepScript: [] as number[], saveStep: [] as number[] }
  let n = 0
  const timed = async (into: number[] | null, fn: () => Promise<unknown>) => {
    const t0 = performance.now()
    await fn()
    into?.push(performance.now() - t0)
  }

  const context = (toolCallId: string, epoch: number, fresh: boolean) =>
    createDurableContext({ log, fence: { toolCallId, epoch }, secrets, maxValueBytes: DEFAULT_MAX_VALUE_BYTES, fresh })

  const RETRY = { retry: { attempts: 5, delay: '1s', backoff: 'exponential' } } as const
  /** A fresh call whose steps have a retry policy; each first try succeeds. */
  const retryCall = async (record: boolean) => {
    const toolCallId = `r${n++}`
    const begin = await log.calls.beginCall(toolCallId, 'bench', 'safe')
    const ctx = context(toolCallId, begin.epoch, true)
    for (let s = 0; s < STEPS; s++) {
      const t0 = performance.now()
      await ctx.fields.step.do(`s${s}`, async () => ({ ok: true, s }), RETRY)
      if (record) firstWithRetry.push(performance.now() - t0)
    }
  }

  const oneCall = async (record: boolean) => {
    // alternate which goes first, so neither always runs on a warmer connection
    if (n % 2 === 0) await retryCall(record)
    const toolCallId = `c${n++}`
    const begin = await log.calls.beginCall(toolCallId, 'bench', 'safe')
    const ctx = context(toolCallId, begin.epoch, true)
    for (let s = 0; s < STEPS; s++) {
      const t0 = performance.now()
      await ctx.fields.step.do(`s${s}`, async () => ({ ok: true, s }))
      if (record) first.push(performance.now() - t0)
    }
    if (n % 2 === 0) await retryCall(record)
    const again = await log.calls.beginCall(toolCallId, 'bench', 'safe')
    if (again.kind !== 'rerun') throw new Error(`steps bench: expected a rerun, got ${again.kind}`)
    const rerun = context(toolCallId, again.epoch, false)
    for (let s = 0; s < STEPS; s++) {
      const t0 = performance.now()
      const value = await rerun.fields.step.do(`s${s}`, async () => {
        throw new Error('steps bench: a replayed step ran its fn')
      })
      if (record) replay.push(performance.now() - t0)
      if ((value as { s: number }).s !== s) throw new Error('steps bench: replay returned another value')
    }
    // the parts, on the same call (its current epoch)
    const fence = { toolCallId, epoch: again.epoch }
    for (let s = 0; s < STEPS; s++) {
      await timed(record ? parts.hget : null, () => redis.hget(log.stream.keys.steps, stepField(toolCallId, `s${s}`)))
      await timed(record ? parts.getStep : null, () => log.calls.getStep(toolCallId, `s${s}`))
      const name = `p${s}`
      const encoded = encodeRecord({ type: 'harness.tool.step', toolCallId, name, value: { ok: true, s } })
      await timed(record ? parts.saveStepScript : null, () =>
        runScript(log.stream.redis, scripts.saveStep, {
          keys: { calls: log.stream.keys.calls, steps: log.stream.keys.steps, log: log.stream.keys.log },
          args: {
            toolCallId,
            epoch: fence.epoch,
            stepField: stepField(toolCallId, name),
            value: JSON.stringify({ ok: true, s }),
            record: encoded,
          },
        }),
      )
      await timed(record ? parts.saveStep : null, () =>
        log.calls.saveStep(
          fence,
          `q${s}`,
          { ok: true, s },
          { type: 'harness.tool.step', toolCallId, name: `q${s}`, value: { ok: true, s } },
        ),
      )
    }
  }

  try {
    progress(`[steps] warm-up`)
    await pingSamples(redis, 500)
    for (let i = 0; i < 100; i++) await oneCall(false)
    const statsBefore = await commandStats(redis)
    for (let r = 0; r < rounds; r++) {
      progress(`[steps] round ${r + 1}/${rounds}: ${pingsPerRound} PINGs, ${callsPerRound} calls x ${STEPS} steps first run + replay`)
      ping.push(...(await pingSamples(redis, pingsPerRound)))
      for (let i = 0; i < callsPerRound; i++) await oneCall(true)
    }
    const statsAfter = await commandStats(redis)
    const serverUsecPerCall: Record<string, number> = {}
    for (const [cmd, after] of Object.entries(statsAfter)) {
      const before = statsBefore[cmd] ?? { calls: 0, usec: 0 }
      const calls = after.calls - before.calls
      if (calls > 0) serverUsecPerCall[cmd] = Math.round(((after.usec - before.usec) / calls) * 100) / 100
    }
    return {
      ping: summarize(ping),
      firstRun: summarize(first),
      replay: summarize(replay),
      firstRunWithRetry: summarize(firstWithRetry),
      calls: rounds * callsPerRound,
      stepsPerCall: STEPS,
      parts: {
        hget: summarize(parts.hget),
        getStep: summarize(parts.getStep),
        saveStepScript: summarize(parts.saveStepScript),
        saveStep: summarize(parts.saveStep),
      },
      ...(options.sharedRedis ? {} : { serverUsecPerCall }),
    }
  } finally {
    redis.disconnect()
    await deletePrefix(redisUrl, prefix)
  }
}
