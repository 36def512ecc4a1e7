// Compaction (issue 53): two measurements.
//
// Input tokens by turn. One session of 2,000 turns (--quick 500) against scriptedModel, which reports
// usage as a provider would (its input: characters / 4 of what it is sent), once with compaction
// (maxTokens 8,000, countTokens 'usage', summarizeOldest keeping 4,000 with a summarizer that reports
// usage too) and once without. Every turn must complete; with compaction every model call's input must
// stay under maxTokens; without, it grows with the session.
//
// A turn at 1,000,000 log entries after a compaction against one at 1,000. On a private redis-server
// (whatever REDIS_URL says: a million entries do not belong on a shared server), two sessions are built
// by bulk XADD of realistic records (input, model response with a tool call, its result, the answer,
// the settle: 5 entries a turn) with their conversation projection, then a compaction through the last
// bulk turn is logged (the real logCompaction script). Turns (prompt -> settled, a text answer) then run
// on both, interleaved; the view of each starts at the compaction's read pointer.
import type { ModelMessage } from '@tanstack/ai'
import { Redis } from 'ioredis'
import { createHarnessHost, defineHarness, summarizeOldest, type Harness } from '../../src/index.js'
import { SessionLog } from '../../src/log/index.js'
import { scriptedModel, startRedisServer } from '../../src/testing/index.js'
import { estimateTokens } from '../../src/compaction/index.js'
import { benchPrefix, deletePrefix, silentLogger, stderrProgress, summarize, type Progress, type Summary } from './lib.js'

const MAX_TOKENS = 8_000
const SYSTEM = 'You answer questions about the shop.'

/** The input tokens of one turn's model call, with and without compaction. */
interface TokensRow {
  turn: number
  compacted: number
  plain: number
}

export interface CompactionResult {
  turns: number
  maxTokens: number
  rows: TokensRow[]
  /** The largest input of any call with compaction, the compactions logged, turns that did not complete. */
  maxCompacted: number
  compactions: number
  incomplete: number
  /** Turn p50 on a session of 1,000 and of 1,000,000 entries, each after a compaction. */
  cost?: { small: Summary; big: Summary; smallEntries: number; bigEntries: number }
}

/** A model that answers each prompt with ~300 characters and reports usage as a provider would; `inputs` gets each call's input tokens. */
function model(inputs: number[]) {
  return scriptedModel(
    Array.from({ length: 2_100 }, () => ({ messages }: { messages: ModelMessage[] }) => {
      const prompt = String(messages.at(-1)?.content ?? '')
      const text = `About ${prompt}: ${'the order ships from the north warehouse, '.repeat(7)}`.slice(0, 300)
      const promptTokens = estimateTokens(messages) + Math.ceil(SYSTEM.length / 4)
      inputs.push(promptTokens)
      const completionTokens = Math.ceil(text.length / 4)
      return { text, usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens } }
    }),
  )
}

const summarizer = scriptedModel(
  Array.from({ length: 10 }, () => ({ messages }: { messages: ModelMessage[] }) => ({
    text: `The user asked ${String(messages[0]?.content ?? '').split('\nUser:').length - 1} questions about orders; each was answered.`,
    usage: { promptTokens: Math.ceil(String(messages[0]?.content ?? '').length / 4), completionTokens: 20, totalTokens: 0 },
  })),
)

async function runSession(redisUrl: string, harness: Harness, turns: number, progress: Progress, label: string) {
  const prefix = benchPrefix(`compaction-${label}`)
  const host = createHarnessHost({ redis: redisUrl, harnesses: [harness], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 4, sweepEveryMs: 0 })
  let incomplete = 0
  try {
    const session = host.open(harness, { sessionId: 'long' })
    for (let t = 1; t <= turns; t++) {
      const { inputId } = await session.prompt(`question ${t}`, { inputId: `q${t}` })
      if ((await session.settled(inputId, { timeoutMs: 120_000 })).outcome !== 'completed') incomplete++
      if (t % 250 === 0) progress(`[compaction] ${label}: turn ${t}/${turns}`)
    }
    const compactions = (await session.log.read({ types: ['harness.compaction'] })).length
    return { incomplete, compactions }
  } finally {
    await workers.close()
    await host.close()
    await deletePrefix(redisUrl, prefix)
  }
}

export async function measureCompaction(
  redisUrl: string,
  options: { quick?: boolean; progress?: Progress; cost?: boolean } = {},
): Promise<CompactionResult> {
  const progress = options.progress ?? stderrProgress
  const turns = options.quick ? 500 : 2_000
  const compactedInputs: number[] = []
  const plainInputs: number[] = []
  const compacting = defineHarness({
    name: 'bench-compacting',
    adapter: model(compactedInputs),
    systemPrompts: [SYSTEM],
    compaction: {
      maxTokens: MAX_TOKENS,
      countTokens: 'usage',
      strategy: summarizeOldest({ keepRecentTokens: MAX_TOKENS / 2, summarize: summarizer }),
    },
  })
  const plain = defineHarness({ name: 'bench-plain', adapter: model(plainInputs), systemPrompts: [SYSTEM] })
  progress(`[compaction] ${turns} turns with compaction (maxTokens ${MAX_TOKENS})`)
  const withIt = await runSession(redisUrl, compacting, turns, progress, 'with')
  progress(`[compaction] ${turns} turns without`)
  const without = await runSession(redisUrl, plain, turns, progress, 'without')
  const marks = [1, 10, 50, 100, 250, 500, 1_000, 1_500, 2_000].filter((t) => t <= turns)
  const result: CompactionResult = {
    turns,
    maxTokens: MAX_TOKENS,
    rows: marks.map((turn) => ({ turn, compacted: compactedInputs[turn - 1] ?? NaN, plain: plainInputs[turn - 1] ?? NaN })),
    maxCompacted: Math.max(...compactedInputs),
    compactions: withIt.compactions,
    incomplete: withIt.incomplete + without.incomplete + (compactedInputs.length < turns ? turns - compactedInputs.length : 0),
  }
  if (options.cost !== false) result.cost = await measureCost(options.quick ?? false, progress)
  return result
}

// ---- a turn at 1,000,000 entries after a compaction ----

const FILL = `
local logKey, convKey = KEYS[1], KEYS[2]
if redis.call('EXISTS', convKey) == 0 then redis.call('RPUSH', convKey, '^') end
local last = ''
for i = 1, #ARGV do
  last = redis.call('XADD', logKey, '*', 'r', ARGV[i])
  redis.call('RPUSH', convKey, last)
end
return last`

/** The records of bulk turn `n`: 5 entries, as a turn with one tool call logs them. */
function turnRecords(n: number): string[] {
  const inputId = `bulk${n}`
  const call = `call_${n}`
  return [
    { type: 'harness.input', inputId, text: `Where is order ${n}?`, at: 1_700_000_000_000 + n },
    {
      type: 'harness.model.response',
      inputId,
      toolCalls: [{ toolCallId: call, name: 'lookup', input: { orderId: String(n) } }],
      usage: { promptTokens: 900, completionTokens: 20, totalTokens: 920 },
    },
    {
      type: 'harness.tool.result',
      toolCallId: call,
      name: 'lookup',
      result: { orderId: String(n), status: 'shipped', carrier: 'DHL', eta: '2 days' },
    },
    {
      type: 'harness.model.response',
      inputId,
      text: `Order ${n} has shipped with DHL; it arrives in 2 days.`,
      toolCalls: [],
      usage: { promptTokens: 960, completionTokens: 18, totalTokens: 978 },
    },
    { type: 'harness.input.settled', inputId, outcome: 'completed', text: `Order ${n} has shipped with DHL; it arrives in 2 days.` },
  ].map((r) => JSON.stringify(r))
}

async function buildSession(redis: Redis, log: SessionLog, entries: number, progress: Progress): Promise<void> {
  const turns = Math.floor(entries / 5)
  for (let t = 0; t < turns; t += 200) {
    const batch: string[] = []
    for (let n = t; n < Math.min(turns, t + 200); n++) batch.push(...turnRecords(n))
    await redis.eval(FILL, 2, log.stream.keys.log, log.stream.keys.conversation, ...batch)
    if (t % 50_000 === 0 && t > 0) progress(`[compaction] ${log.sessionId}: ${t * 5} entries`)
  }
  // the last bulk turn's input: 5th entry from the end
  const tail = await redis.xrevrange(log.stream.keys.log, '+', '-', 'COUNT', 5)
  const lastInput = tail[4]![0]
  const logged = await log.compactions.log({
    type: 'harness.compaction',
    strategy: 'summarizeOldest',
    reason: 'budget',
    through: { inputId: `bulk${turns - 1}`, entryId: lastInput },
    summary: `The user asked where ${turns} orders were; each had shipped with DHL.`,
    tokens: { before: 9_000, after: 300 },
    at: Date.now(),
  })
  if (logged.status !== 'ok') throw new Error(`compaction bench: the compaction of ${log.sessionId} was ${logged.status}`)
}

async function measureCost(quick: boolean, progress: Progress) {
  const server = await startRedisServer({ appendonly: false, hz: 100 })
  const redis = new Redis(server.url, { maxRetriesPerRequest: null })
  const prefix = benchPrefix('compaction-cost')
  const harness = defineHarness({
    name: 'bench-compaction-cost',
    adapter: scriptedModel(Array.from({ length: 400 }, () => ({ text: 'Noted.' }))),
    compaction: { maxTokens: 100_000 },
  })
  const host = createHarnessHost({ redis: server.url, harnesses: [harness], prefix, logger: silentLogger })
  const workers = host.startWorkers({ concurrency: 4, sweepEveryMs: 0 })
  try {
    const smallEntries = 1_000
    const bigEntries = quick ? 200_000 : 1_000_000
    for (const [id, entries] of [
      ['small', smallEntries],
      ['big', bigEntries],
    ] as const) {
      progress(`[compaction] building a session of ${entries.toLocaleString('en-US')} entries`)
      await buildSession(redis, new SessionLog(redis, prefix, id), entries, progress)
    }
    const sessions = { small: host.open(harness, { sessionId: 'small' }), big: host.open(harness, { sessionId: 'big' }) }
    const times = { small: [] as number[], big: [] as number[] }
    const rounds = quick ? 10 : 30
    let n = 0
    const turn = async (which: 'small' | 'big', keep: boolean) => {
      const t0 = performance.now()
      const { inputId } = await sessions[which].prompt(`And order ${n++}?`)
      if ((await sessions[which].settled(inputId, { timeoutMs: 60_000 })).outcome !== 'completed')
        throw new Error('compaction bench: a turn failed')
      if (keep) times[which].push(performance.now() - t0)
    }
    for (let i = 0; i < 5; i++) for (const which of ['small', 'big'] as const) await turn(which, false) // warm-up
    for (let r = 0; r < rounds; r++) {
      if (r % 10 === 0) progress(`[compaction] turns on 1,000 and ${bigEntries.toLocaleString('en-US')} entries: round ${r + 1}/${rounds}`)
      // the order alternates, so neither size always runs right after the other
      for (const which of r % 2 ? (['small', 'big'] as const) : (['big', 'small'] as const)) await turn(which, true)
    }
    return { small: summarize(times.small), big: summarize(times.big), smallEntries, bigEntries }
  } finally {
    await workers.close()
    await host.close()
    redis.disconnect()
    await server.stop()
  }
}
