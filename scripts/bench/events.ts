// Live events: (a) events/s delivered to 100 followers of one session (session.events) against 100 raw
// XREAD BLOCK readers of a plain stream of the same number of entries, measured in the same run;
// (b) what streaming the model's text costs a turn: figure 6's turn with its final text (2 KB) streamed
// in 64 pieces, against the same turn with the text in one piece.
import { toolDefinition } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool } from '../../src/index.js'
import { SessionLog } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { benchPrefix, deletePrefix, silentLogger, stderrProgress, summarize, type Progress, type Summary } from './lib.js'

const FOLLOWERS = 100
const TEXT = 'x'.repeat(2048)
/**
 * The live stream's cap (src/log/live.ts, LIVE_MAX_ENTRIES; docs/events.md): a follower more than
 * this many entries behind the writer loses the oldest, by design. 8a writes no more than this, so
 * every follower can see every entry and the rate counts the same work in every run.
 */
const LIVE_CAP = 1_000

export interface EventsResult {
  followers: number
  entries: number
  /** Events delivered per second, summed over the followers. */
  oursPerSec: number
  rawPerSec: number
  streamedTurn: Summary
  plainTurn: Summary
  /** Reading one run's events (a join, POST run) at the end of a short and of a long session. */
  join: { short: Summary; long: Summary; longFromStart: Summary; shortEntries: number; longEntries: number }
}

/** Time until `readers` have each read `entries` entries written after they started. */
async function fanOut(readers: Array<(until: number) => Promise<void>>, write: () => Promise<void>, entries: number): Promise<number> {
  const t0 = performance.now()
  const done = readers.map((read) => read(entries))
  await write()
  await Promise.all(done)
  return performance.now() - t0
}

async function followers(redisUrl: string, entries: number): Promise<{ ours: number; raw: number }> {
  const prefix = benchPrefix('events')
  const harness = defineHarness({ name: 'bench-events', adapter: scriptedModel([]) })
  const host = createHarnessHost({ redis: redisUrl, harnesses: [harness], prefix, logger: silentLogger })
  const writer = new Redis(redisUrl)
  try {
    const log = new SessionLog(writer, prefix, 'fan')
    const write = async () => {
      for (let i = 0; i < entries; i += 100) {
        await Promise.all(
          Array.from({ length: Math.min(100, entries - i) }, (_, j) =>
            log.stream.appendLive({ k: 'custom', toolCallId: 'c', name: 'tick', value: { i: i + j } }),
          ),
        )
      }
    }
    const seen: number[] = []
    const ours = await fanOut(
      Array.from({ length: FOLLOWERS }, (_, f) => async (until) => {
        const controller = new AbortController()
        seen[f] = 0
        // stop at the last entry written, not after `until` events: a follower that lost entries
        // must end (and fail the row below), not wait for entries that no longer exist
        for await (const { event } of host.open(harness, { sessionId: 'fan' }).events({ signal: controller.signal, blockMs: 1_000 })) {
          seen[f]!++
          if (event.type === 'CUSTOM' && (event.value as { i?: number } | undefined)?.i === until - 1) controller.abort()
        }
      }),
      write,
      entries,
    )
    const short = seen.filter((n) => n < entries)
    if (short.length > 0)
      throw new Error(
        `events bench: ${short.length} of ${FOLLOWERS} followers saw fewer than the ${entries} live entries written ` +
          `(fewest ${Math.min(...short)}): the live stream was trimmed under them`,
      )
    // the baseline: plain XADD, and readers that XREAD BLOCK from their last id
    const key = `${prefix}:raw`
    const rawWrite = async () => {
      for (let i = 0; i < entries; i += 100)
        await Promise.all(Array.from({ length: Math.min(100, entries - i) }, (_, j) => writer.xadd(key, '*', 'e', String(i + j))))
    }
    const raw = await fanOut(
      Array.from({ length: FOLLOWERS }, () => async (until) => {
        const conn = new Redis(redisUrl)
        let last = '0-0'
        let seen = 0
        try {
          while (seen < until) {
            const reply = (await conn.xread('COUNT', 500, 'BLOCK', 1_000, 'STREAMS', key, last)) as Array<
              [string, Array<[string, string[]]>]
            > | null
            for (const [id] of reply?.[0]?.[1] ?? []) {
              last = id
              seen++
            }
          }
        } finally {
          conn.disconnect()
        }
      }),
      rawWrite,
      entries,
    )
    return { ours, raw }
  } finally {
    writer.disconnect()
    await host.close()
    await deletePrefix(redisUrl, prefix)
  }
}

const one = durableTool(
  toolDefinition({ name: 'one', description: 'One trivial step', inputSchema: z.object({}) }),
  async (_input, { step }) => ({
    v: await step.do('a', async () => 1),
  }),
)

async function turns(redisUrl: string, streamed: boolean, count: number): Promise<Summary> {
  const harness = defineHarness({
    name: streamed ? 'bench-streamed' : 'bench-plain',
    adapter: scriptedModel([{ toolCalls: Array.from({ length: 3 }, () => ({ name: 'one', input: {} })) }, { text: TEXT }], {
      ...(streamed ? { stream: { chars: TEXT.length / 64, delayMs: 0 } } : {}),
    }),
    tools: [one],
  })
  const prefix = benchPrefix('events-turn')
  const host = createHarnessHost({ redis: redisUrl, harnesses: [harness], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 10, sweepEveryMs: 0 })
  try {
    const times: number[] = []
    for (let i = 0; i < count + 10; i++) {
      const session = host.open(harness, { sessionId: `t${i}` })
      const t0 = performance.now()
      const { inputId } = await session.prompt('go')
      await session.settled(inputId, { timeoutMs: 30_000 })
      if (i >= 10) times.push(performance.now() - t0) // the first 10 warm up
    }
    return summarize(times)
  } finally {
    await workers.close()
    await host.close()
    await deletePrefix(redisUrl, prefix)
  }
}

/**
 * Reading the events of a session's last run (what a join or POST run streams) from the run's input
 * (`fromInput`), on a session of `entries` log entries; and, for the long one, from the session's start.
 */
async function joins(redisUrl: string, entries: number, count: number, fromStart: boolean): Promise<Summary> {
  const harness = defineHarness({ name: 'bench-join', adapter: scriptedModel([]) })
  const prefix = benchPrefix('events-join')
  const host = createHarnessHost({ redis: redisUrl, harnesses: [harness], prefix, logger: silentLogger })
  const writer = new Redis(redisUrl)
  try {
    const log = new SessionLog(writer, prefix, 'long')
    for (let i = 0; i < entries; i += 500)
      await log.stream.append(Array.from({ length: Math.min(500, entries - i) }, (_, j) => ({ type: 'app.filler', i: i + j })))
    const session = host.open(harness, { sessionId: 'long' })
    const { inputId } = await session.prompt('last') // no workers: the run is its input
    const times: number[] = []
    for (let i = 0; i < count + 5; i++) {
      const t0 = performance.now()
      for await (const _ of session.events({ ...(fromStart ? {} : { fromInput: inputId }), follow: false }));
      if (i >= 5) times.push(performance.now() - t0)
    }
    return summarize(times)
  } finally {
    writer.disconnect()
    await host.close()
    await deletePrefix(redisUrl, prefix)
  }
}

export async function measureEvents(redisUrl: string, options: { quick?: boolean; progress?: Progress } = {}): Promise<EventsResult> {
  const progress = options.progress ?? stderrProgress
  const entries = options.quick ? 500 : LIVE_CAP
  progress(`[events] ${FOLLOWERS} followers of one session, ${entries} live entries; then 100 raw XREAD readers of ${entries} XADDs`)
  const { ours, raw } = await followers(redisUrl, entries)
  const count = options.quick ? 30 : 100
  progress(`[events] ${count} turns with the final text streamed in 64 pieces, ${count} with it in one`)
  const streamedTurn = await turns(redisUrl, true, count)
  const plainTurn = await turns(redisUrl, false, count)
  const [shortEntries, longEntries] = [100, options.quick ? 10_000 : 100_000]
  progress(`[events] reading the last run's events of a session of ${shortEntries} and of ${longEntries} entries`)
  const join = {
    short: await joins(redisUrl, shortEntries, 50, false),
    long: await joins(redisUrl, longEntries, 50, false),
    longFromStart: await joins(redisUrl, longEntries, options.quick ? 5 : 3, true),
    shortEntries,
    longEntries,
  }
  return {
    join,
    followers: FOLLOWERS,
    entries,
    oursPerSec: (FOLLOWERS * entries) / (ours / 1000),
    rawPerSec: (FOLLOWERS * entries) / (raw / 1000),
    streamedTurn,
    plainTurn,
  }
}
