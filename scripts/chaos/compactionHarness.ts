// The harness of `npm run chaos -- --compaction` (compaction.ts), loaded by its worker processes and
// by the chaos process, which only prompts. Every model call appends what it was shown and what it
// answers to a file under the OS temp dir (named by DH_PREFIX), so the chaos process can compare the
// view each live call got with the one a fresh reader rebuilds from the log. The summarizer marks its
// start in another file and streams its text slowly (about 1.7 s), so a SIGKILL lands inside it.
// With DH_CHAOS_TRIM=1 (`--compaction --trim`) its compactions trim the span before their cut.
import { appendFileSync, existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ModelMessage } from '@tanstack/ai'
import { defineHarness, summarizeOldest } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'

export const compactionChaosFile = (prefix: string, what: 'calls' | 'summaries') => join(tmpdir(), `dh-compaction-${prefix}-${what}`)
const file = (what: 'calls' | 'summaries') => compactionChaosFile(process.env.DH_PREFIX ?? 'local', what)

/** One main model call as the model saw it: its session (from the prompt), the messages, the reply. */
export interface SeenCall {
  sessionId: string
  messages: ModelMessage[]
  reply: string
}

/** The lines of one of the files, parsed. */
export function readLines<T>(prefix: string, what: 'calls' | 'summaries'): T[] {
  const path = compactionChaosFile(prefix, what)
  if (!existsSync(path)) return []
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T)
}

/** Prompts carry their session: `[<sessionId>] question <n> ...`. */
const sessionOfPrompt = (text: string) => /^\[([^\]]+)\]/.exec(text)?.[1] ?? ''

const main = scriptedModel(
  Array.from({ length: 1_000 }, () => ({ messages }: { messages: ModelMessage[] }) => {
    const prompt = String([...messages].reverse().find((m) => m.role === 'user')?.content ?? '')
    const reply = `answer to ${prompt.slice(0, 40)} (shown ${messages.length} messages) ${'and so on '.repeat(20)}`
    appendFileSync(file('calls'), `${JSON.stringify({ sessionId: sessionOfPrompt(prompt), messages, reply })}\n`)
    return { text: reply }
  }),
)

const summarizer = scriptedModel(
  Array.from({ length: 1_000 }, () => ({ messages }: { messages: ModelMessage[] }) => {
    const transcript = String(messages[0]?.content ?? '')
    const sessions = [...new Set([...transcript.matchAll(/\[([^\]]+)\] question/g)].map((m) => m[1]))]
    appendFileSync(file('summaries'), `${JSON.stringify({ sessionId: sessions.at(-1) ?? '', at: Date.now() })}\n`)
    return {
      text: `Summary: ${transcript.length} characters of talk about ${sessions.join(', ')}.`,
      usage: { promptTokens: 40, completionTokens: 15, totalTokens: 55 },
    }
  }),
  { stream: { chars: 4, delayMs: 150 } },
)

export const compactingChaos = defineHarness({
  name: 'chaos-compaction',
  adapter: main,
  durability: { lockMs: 1_000, stalledMs: 500 },
  compaction: {
    maxTokens: 800,
    strategy: summarizeOldest({ keepRecentTokens: 350, summarize: summarizer }),
    // --trim (DH_CHAOS_TRIM, set before this module loads, workers included): each cut is due for trimming at once
    ...(process.env.DH_CHAOS_TRIM === '1' ? { trimAfter: 1 } : {}),
  },
})
