// Trimming (issue 53 item 7, row 9c): the Redis bytes of a session of 10,000 turns (--quick 2,000)
// that compacts (summarizeOldest, maxTokens 8,000) and trims (compaction.trimAfter) against those of
// a session of its last 100 turns alone, which holds its own summaries too.
//
// Each turn is a prompt, a model call asking for `lookup` (one step), the tool's result and a text
// answer of ~300 characters; the model and the summarizer report usage as a provider would. The long
// session runs with a host `retention` whose export counts the exported bytes, and a retention pass
// every 500 turns and one at the end (a worker's sweep runs the same pass). Both run on one private
// redis-server, each under its own prefix; the bytes are MEMORY USAGE (SAMPLES 0) of every key of the
// prefix but two capped streams, reported apart: the queues' events streams, which BullMQ caps per
// queue (maxLenEvents, 10,000 entries) whatever the sessions, and the session's live stream (model
// text deltas: about 1,000 entries, gone an hour after its last write; src/log/live.ts).
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, summarizeOldest, type Harness } from '../../src/index.js'
import { estimateTokens } from '../../src/compaction/index.js'
import { scriptedModel, startRedisServer } from '../../src/testing/index.js'
import { benchPrefix, keySizes, silentLogger, stderrProgress, type Progress } from './lib.js'

const MAX_TOKENS = 8_000
const RECENT_TURNS = 100

export interface TrimmingResult {
  turns: number
  /** Bytes of the long session's keys after its last retention pass, and of the session of its last 100 turns. */
  trimmedBytes: number
  recentBytes: number
  /** The long session's entries, kept turns and compaction records left in Redis, and the bytes exported. */
  entriesLeft: number
  inputsLeft: number
  compactionsLeft: number
  exportedBytes: number
  /** The capped streams (the queues' events, the session's live stream), not in the bytes above. */
  cappedBytes: { trimmed: number; recent: number }
  /** Bytes by key, the prefix left out (jobs' hashes summed as `jobs:<queue>:<job>`), for the reader of bench/results.json. */
  byKind: { trimmed: Record<string, number>; recent: Record<string, number> }
}

function harness(name: string, trimAfter: number | undefined): Harness {
  const lookup = durableTool(
    toolDefinition({ name: 'lookup', description: 'Looks an order up', inputSchema: z.object({ order: z.string() }) }),
    async ({ order }, { step }) => step.do('read', async () => ({ order, status: 'shipped', carrier: 'DHL', eta: '2 days' })),
  )
  const summarizer = scriptedModel(
    Array.from({ length: 1_000 }, () => ({ messages }: { messages: ModelMessage[] }) => ({
      text: `The user asked ${String(messages[0]?.content ?? '').split('\nUser:').length - 1} questions about orders; each had shipped with DHL.`,
      usage: { promptTokens: Math.ceil(String(messages[0]?.content ?? '').length / 4), completionTokens: 20, totalTokens: 0 },
    })),
  )
  return defineHarness({
    name,
    tools: [lookup],
    adapter: scriptedModel(
      Array.from({ length: 25_000 }, () => ({ messages }: { messages: ModelMessage[] }) => {
        const last = messages.at(-1)!
        const promptTokens = estimateTokens(messages)
        if (last.role !== 'tool') {
          const order = String(last.content).replace(/\D/g, '')
          return { toolCalls: [{ name: 'lookup', input: { order } }], usage: { promptTokens, completionTokens: 12, totalTokens: 0 } }
        }
        const text = `${'The order shipped from the north warehouse with DHL, '.repeat(6)}`.slice(0, 300)
        return { text, usage: { promptTokens, completionTokens: 75, totalTokens: 0 } }
      }),
    ),
    compaction: {
      maxTokens: MAX_TOKENS,
      countTokens: 'usage',
      strategy: summarizeOldest({ keepRecentTokens: MAX_TOKENS / 2, summarize: summarizer }),
      ...(trimAfter === undefined ? {} : { trimAfter }),
    },
  })
}

/** MEMORY USAGE of every key of the prefix, the capped streams apart. */
async function prefixBytes(redis: Redis, prefix: string): Promise<{ bytes: number; capped: number; byKind: Record<string, number> }> {
  let bytes = 0
  let capped = 0
  const byKind: Record<string, number> = {}
  for (const [key, used] of await keySizes(redis, prefix)) {
    // a tool named "events" has an index key ending so too: streams only
    if (/:(events|live)$/.test(key) && (await redis.type(key)) === 'stream') capped += used
    else bytes += used
    const kind = key.slice(prefix.length).replace(/(jobs:[^:]+:)[^:]*\|.*$/, '$1<job>')
    byKind[kind] = (byKind[kind] ?? 0) + used
  }
  return { bytes, capped, byKind }
}

async function runTurns(
  url: string,
  h: Harness,
  prefix: string,
  from: number,
  to: number,
  progress: Progress,
  retain?: { export: (jsonl: string) => void },
) {
  const host = createHarnessHost({
    redis: url,
    harnesses: [h],
    prefix,
    logger: silentLogger,
    ...(retain ? { retention: { sessionMs: 30 * 86_400_000, export: (_sid: string, jsonl: string) => retain.export(jsonl) } } : {}),
  })
  const workers = host.startWorkers({ concurrency: 4, sweepEveryMs: 0 })
  try {
    const session = host.open(h, { sessionId: 'long' })
    for (let t = from; t <= to; t++) {
      const { inputId } = await session.prompt(`Where is order ${t}?`, { inputId: `q${t}` })
      const settled = await session.settled(inputId, { timeoutMs: 120_000 })
      if (settled.outcome !== 'completed') throw new Error(`trimming bench: turn ${t} ${settled.outcome}`)
      if (retain && t % 500 === 0) {
        await host.retain()
        progress(`[trimming] turn ${t}/${to}`)
      }
    }
    if (retain) await host.retain()
    const entries = await session.log.read()
    return {
      entriesLeft: entries.length,
      inputsLeft: entries.filter((e) => e.record.type === 'harness.input').length,
      compactionsLeft: entries.filter((e) => e.record.type === 'harness.compaction').length,
    }
  } finally {
    await workers.close()
    await host.close()
  }
}

export async function measureTrimming(options: { quick?: boolean; progress?: Progress } = {}): Promise<TrimmingResult> {
  const progress = options.progress ?? stderrProgress
  const turns = options.quick ? 2_000 : 10_000
  const server = await startRedisServer({ appendonly: false })
  const redis = new Redis(server.url, { maxRetriesPerRequest: null })
  try {
    let exportedBytes = 0
    const trimmedPrefix = benchPrefix('trimmed')
    progress(`[trimming] ${turns.toLocaleString('en-US')} turns, compacting and trimming`)
    const left = await runTurns(server.url, harness('bench-trimmed', 1), trimmedPrefix, 1, turns, progress, {
      export: (jsonl) => void (exportedBytes += Buffer.byteLength(jsonl)),
    })
    const recentPrefix = benchPrefix('recent')
    progress(`[trimming] its last ${RECENT_TURNS} turns alone`)
    await runTurns(server.url, harness('bench-recent', undefined), recentPrefix, turns - RECENT_TURNS + 1, turns, progress)
    const trimmed = await prefixBytes(redis, trimmedPrefix)
    const recent = await prefixBytes(redis, recentPrefix)
    return {
      turns,
      trimmedBytes: trimmed.bytes,
      recentBytes: recent.bytes,
      ...left,
      exportedBytes,
      cappedBytes: { trimmed: trimmed.capped, recent: recent.capped },
      byKind: { trimmed: trimmed.byKind, recent: recent.byKind },
    }
  } finally {
    redis.disconnect()
    await server.stop()
  }
}
