// `npm run chaos -- --compaction [--rounds N] [--quick]` (issue 53): SIGKILL of the worker during a
// summarizeOldest summary call, N times (default 20; --quick 5), each in a session of its own whose
// turns pass the compaction's budget. The kill lands at a random point of the summary call (it streams
// for about 1.7 s), before or after the compaction's write; a replacement worker carries the turn on.
// Halfway, Redis is SIGKILLed and restarted from its AOF (appendfsync always). Then every session log
// is read by a fresh reader and checked:
//   one compaction per cut (R22)     no two compaction records of a session cut through the same turn,
//                                    and each builds on the one before it (base = its entry id)
//   views rebuilt = views live (R21) the view each logged model response was made from, rebuilt from the
//                                    whole log, is what that model call was shown (the harness recorded it)
//   view from the pointer = whole    the next turn's view from the compaction's read pointer equals the one
//                                    from the whole conversation
//   turns completed                  every turn completed
// With --trim, the harness trims 1 ms after each compaction (compaction.trimAfter) and the chaos process
// runs a retention pass every 200 ms through the kills and the Redis restart, then one at the end; the
// checks above read each session's whole log as the exports and Redis hold it together, and:
//   spans exported once, in order   the exported entries (a re-export of a span repeats them exactly) and
//                                    then Redis's form one log, ids increasing; every session was trimmed
// The exit code is 1 if any fails.
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { pino } from 'pino'
import { createHarnessHost, createRedisClient } from '../../src/index.js'
import { SessionLog, compareIds, conversationOf, isRecord, parseRecord, type LogEntry } from '../../src/log/index.js'
import { spawnWorker, startRedisServer, type WorkerProcess } from '../../src/testing/index.js'
import { buildMessages } from '../../src/turn/model.js'
import { turnView } from '../../src/turn/view.js'
import { compactingChaos, compactionChaosFile, readLines, type SeenCall } from './compactionHarness.js'

const MODULE = 'scripts/chaos/compactionHarness.ts'
const TURNS = 10
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

interface Round {
  sessionId: string
  /** Compaction records of the session right after the kill: 0 (cut before its write) or 1 (after). */
  recordsAtKill?: number
  failures: string[]
}

export async function compactionChaos(argv: string[]): Promise<number> {
  const quick = argv.includes('--quick')
  const at = argv.indexOf('--rounds')
  const rounds = at >= 0 ? Number(argv[at + 1]) : quick ? 5 : 20
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`chaos --compaction: --rounds takes a positive integer, got ${argv[at + 1]}`)
  const started = Date.now()
  const redis = await startRedisServer({ appendonly: true, hz: 100 })
  const prefix = `chaos-compaction-${randomBytes(3).toString('hex')}`
  const logger = pino({ level: 'silent' })
  const trim = process.env.DH_CHAOS_TRIM === '1'
  const exported = new Map<string, string[]>()
  const retention = {
    sessionMs: 30 * 86_400_000,
    export: (sessionId: string, jsonl: string) =>
      void exported.set(sessionId, [...(exported.get(sessionId) ?? []), ...jsonl.split('\n').filter(Boolean)]),
  }
  const host = createHarnessHost({ redis: redis.url, harnesses: [compactingChaos], prefix, logger, ...(trim ? { retention } : {}) })
  let trimming = trim
  const passes = (async () => {
    // a pass caught by the Redis restart fails: the next one goes on
    while (trimming) await Promise.all([host.retain().catch(() => {}), sleep(200)])
  })()
  const spawn = () => spawnWorker({ redisUrl: redis.url, prefix, module: MODULE, concurrency: 4 })
  let worker: WorkerProcess = await spawn()
  const results: Round[] = []
  const out = (line: string) => process.stderr.write(`[chaos compaction] ${line}\n`)
  try {
    for (let r = 0; r < rounds; r++) {
      if (r === Math.floor(rounds / 2) && rounds > 1) {
        out('SIGKILL of Redis, restart from its AOF')
        await redis.kill()
        await redis.restart()
      }
      const round: Round = { sessionId: `r${r}`, failures: [] }
      results.push(round)
      const session = host.open(compactingChaos, { sessionId: round.sessionId })
      const summaries = () => readLines<{ sessionId: string }>(prefix, 'summaries').filter((s) => s.sessionId === round.sessionId).length
      for (let t = 0; t < TURNS; t++) {
        const before = summaries()
        const { inputId } = await session.prompt(`[${round.sessionId}] question ${t} ${'with some words '.repeat(12)}`, {
          inputId: `t${t}`,
        })
        if (round.recordsAtKill === undefined) {
          let settled = false
          const watching = session.settled(inputId, { timeoutMs: 120_000 }).finally(() => (settled = true))
          while (!settled && summaries() === before) await sleep(20)
          if (summaries() > before) {
            // the summary call runs: kill its worker somewhere in it (or right after its write)
            await sleep(Math.floor(Math.random() * 2_000))
            await worker.kill('SIGKILL')
            const log = await session.log.read({ types: ['harness.compaction'] })
            round.recordsAtKill = log.length
            out(`round ${r + 1}/${rounds}: killed the worker ${log.length ? 'after' : 'during'} the summary call of turn ${t}`)
            worker = await spawn()
          }
          await watching.catch(() => {})
        }
        const settled = await session.settled(inputId, { timeoutMs: 120_000 })
        if (settled.outcome !== 'completed') round.failures.push(`turn ${inputId} ${settled.outcome}: ${settled.error?.message ?? ''}`)
      }
      if (round.recordsAtKill === undefined) round.failures.push('no summary call started: the round killed nothing')
    }
    trimming = false
    await passes
    if (trim) await host.retain()
    // ---- a fresh reader checks every session ----
    const client = createRedisClient(redis.url)
    const calls = readLines<SeenCall>(prefix, 'calls')
    try {
      for (const round of results) {
        const log = new SessionLog(client, prefix, round.sessionId)
        round.failures.push(...(await checkCompactedSession(log, calls, TURNS, trim ? await wholeLog(log, exported) : undefined)))
      }
    } finally {
      client.disconnect()
    }
  } finally {
    trimming = false
    await worker.kill('SIGKILL').catch(() => {})
    await host.close().catch(() => {})
    await redis.stop()
    for (const what of ['calls', 'summaries'] as const) rmSync(compactionChaosFile(prefix, what), { force: true })
  }
  const failed = results.filter((r) => r.failures.length > 0)
  const during = results.filter((r) => r.recordsAtKill === 0).length
  const after = results.filter((r) => r.recordsAtKill === 1).length
  const rows = [
    ['rounds (a SIGKILL in a summary call each)', String(results.length), `${during} during the call, ${after} after its write`],
    ['one compaction per cut (R22)', ok(results, 'cut'), ''],
    ['views rebuilt = views live (R21)', ok(results, 'view'), ''],
    ['view from the pointer = whole (R21)', ok(results, 'pointer'), ''],
    ['turns completed', ok(results, 'turn'), ''],
    ...(trim ? [['spans exported once, in order', ok(results, 'span'), `${[...exported.values()].flat().length} lines exported`]] : []),
  ]
  process.stdout.write(`${rows.map((row) => row.join(' | ')).join('\n')}\n`)
  for (const round of failed) for (const f of round.failures) process.stdout.write(`FAIL ${round.sessionId}: ${f}\n`)
  process.stdout.write(`${failed.length === 0 ? 'PASS' : 'FAIL'} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`)
  return failed.length === 0 ? 0 : 1
}

const ok = (results: Round[], what: string) => {
  const bad = results.filter((r) => r.failures.some((f) => f.startsWith(what)))
  return bad.length === 0 ? 'ok' : `${bad.length} sessions failed`
}

/**
 * A trimmed session's whole log: its exported lines (a span exported twice must repeat itself) and
 * then what Redis holds; `failures` of the 'span' row when they do not form one log in id order.
 */
async function wholeLog(log: SessionLog, exported: Map<string, string[]>): Promise<{ entries: LogEntry[]; failures: string[] }> {
  const failures: string[] = []
  const byId = new Map<string, string>()
  for (const line of exported.get(log.sessionId) ?? []) {
    const { id } = JSON.parse(line) as { id: string }
    if (byId.has(id) && byId.get(id) !== line) failures.push(`span: entry ${id} was exported twice, differently`)
    byId.set(id, line)
  }
  if (byId.size === 0) failures.push('span: nothing of the session was trimmed')
  const kept = await log.stream.read()
  const entries: LogEntry[] = []
  for (const line of byId.values()) {
    const { id, record } = JSON.parse(line) as { id: string; record: unknown }
    const parsed = parseRecord(record, 'read')
    if (parsed !== 'skip') entries.push({ id, record: parsed })
  }
  entries.push(...kept)
  const ids = [...byId.keys(), ...kept.map((e) => e.id)]
  for (let i = 1; i < ids.length; i++) {
    if (compareIds(ids[i - 1]!, ids[i]!) >= 0) failures.push(`span: entry ${ids[i]} follows ${ids[i - 1]}, out of order`)
  }
  return { entries, failures }
}

/**
 * The invariants of one session of `turns` turns, from its log alone (and the calls the model
 * recorded): the failures, each prefixed by its row. `whole`: a trimmed session's exported and kept
 * entries, read in place of Redis's conversation.
 */
export async function checkCompactedSession(
  log: SessionLog,
  calls: SeenCall[],
  turns = TURNS,
  whole?: { entries: LogEntry[]; failures: string[] },
): Promise<string[]> {
  const failures: string[] = [...(whole?.failures ?? [])]
  const conversation = whole ? conversationOf(whole.entries) : await log.inputs.conversation()
  const compactions = conversation.filter((e) => isRecord(e, 'harness.compaction'))
  const cuts = compactions.map((e) => (isRecord(e, 'harness.compaction') ? (e.record.through?.inputId ?? '') : ''))
  if (new Set(cuts).size !== cuts.length) failures.push(`cut: two compactions cut through the same turn (${cuts.join(', ')})`)
  for (const [i, e] of compactions.entries()) {
    const base = isRecord(e, 'harness.compaction') ? e.record.base : undefined
    if (base !== (i === 0 ? undefined : compactions[i - 1]!.id))
      failures.push(`cut: compaction ${e.id} builds on ${base}, not on the one before`)
  }
  if (compactions.length === 0) failures.push('cut: no compaction was logged')
  const mine = calls.filter((c) => c.sessionId === log.sessionId)
  for (const [at, entry] of conversation.entries()) {
    if (!isRecord(entry, 'harness.model.response')) continue
    const rebuilt = JSON.stringify(buildMessages(turnView(conversation.slice(0, at), entry.record.inputId, []).entries))
    if (!mine.some((c) => c.reply === entry.record.text && JSON.stringify(c.messages) === rebuilt))
      failures.push(`view: the response ${entry.id} of ${entry.record.inputId} was made from no view a fresh reader rebuilds`)
  }
  const since = await log.inputs.conversation({ since: 'compaction' })
  const view = (entries: LogEntry[]) => JSON.stringify(buildMessages(turnView(entries, '', []).entries))
  if (!since.partial) failures.push('pointer: the read did not start at the compaction')
  if (view(since.entries) !== view(conversation)) failures.push('pointer: the view from the read pointer differs from the whole one')
  const settled = conversation.filter((e) => isRecord(e, 'harness.input.settled'))
  if (settled.length !== turns || settled.some((e) => isRecord(e, 'harness.input.settled') && e.record.outcome !== 'completed'))
    failures.push(`turn: ${settled.length} of ${turns} turns settled completed`)
  return failures
}
