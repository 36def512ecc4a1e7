// `npm run chaos -- --budgets [--rounds N] [--quick]` (R25, docs/spend.md "Budgets"): a $1.00 principal
// budget under SIGKILLs, N rounds (default 3; --quick 1), each on a fresh key prefix. A round starts an
// OpenAI-compatible model server that answers after 100 ms (test/helpers/openaiServer.ts: a kill cuts
// the requests out), 3 worker processes of test/fixtures/budgets.ts (`budgeted`: each call 100 in / 50
// out tokens, $0.02; BUDGET_USD=1 a day, reserveOutputTokens 100) and prompts 30 turns of 5 calls for
// one principal ($3.00 asked of $1.00). Twice while requests are out it SIGKILLs a worker (a
// replacement starts), then waits until every turn completed or paused at the budget. Checked per round:
//   tries cut by the kills     some try marked sent was cut (counted 'cut' by its turn's next try)
//   budget never passed        what the server answered (requests - cut) x $0.02 <= $1.00, and the
//                              principal's hash spent (p/spent/cost) <= $1.00 + one call's reservation
//   no reservation held live   every reservation still held (p/r/<tryId> 'h') once all turns stopped is
//                              a killed process's: a cut try still marked on its paused turn (its next
//                              try settles it), or one reserved before a kill whose settle never came
//                              (its lease, 15 min, counts it); none reserved after the last kill. After
//                              the resume the marked ones are settled.
//   every request counted once host.usage({ principal }) calls (+ cut tries still marked on paused
//                              turns, counted by their next try) >= the server's requests, and at most
//                              the turns in flight at the kills (each killed worker's concurrency) more
//   resumed turns complete     the workers restart with BUDGET_USD=100, session.resume of every paused
//                              turn, and every turn completes with exactly 5 harness.model.response
//   settled = counted          the hash's p/spent/calls are the tries counted (but those whose settle a
//                              kill stopped, still held)
// The exit code is 1 if any fails.
import { randomBytes } from 'node:crypto'
import { pino } from 'pino'
import { createHarnessHost, createRedisClient, type HarnessHost, type RedisClient } from '../../src/index.js'
import { SessionLog } from '../../src/log/index.js'
import { hasRedisServerBinary, spawnWorker, startRedisServer, type WorkerProcess } from '../../src/testing/index.js'
import { budgeted, BUDGET_USAGE, CALL_USD } from '../../test/fixtures/budgets.js'
import { records } from '../../test/helpers/log.js'
import { startModelServer, type ChatRequest, type ModelReply } from '../../test/helpers/openaiServer.js'

const MODULE = 'test/fixtures/budgets.ts'
const TURNS = 30
const CALLS_A_TURN = 5
const WORKERS = 3
const CONCURRENCY = 10
const DELAY_MS = 100
const BUDGET_USD = 1
const RAISED_USD = 100
const PRINCIPAL = 'alice'
/** A reservation's lease (src/turn/budget.ts RESERVATION_LEASE_MS): its field's deadline minus this is when it was made. */
const LEASE_MS = 15 * 60_000
/** A killed process's last command may run in Redis this long after the kill. */
const KILL_SLACK_MS = 100
const STOP_DEADLINE_MS = 120_000
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
const rand = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1))
const usd = (n: number) => `${n < 0 ? '-' : ''}$${Math.abs(n).toFixed(4)}`

/** The model: `tick` n (n = the tool results since the prompt) until four have run, then a text; always BUDGET_USAGE. */
function answer(request: ChatRequest): ModelReply {
  const last = request.messages.map((m) => m.role).lastIndexOf('user')
  const results = request.messages.slice(last + 1).filter((m) => m.role === 'tool').length
  if (results >= CALLS_A_TURN - 1) return { text: ['done'], usage: BUDGET_USAGE }
  return { toolCalls: [{ id: `call_tick_${results}`, name: 'tick', arguments: [JSON.stringify({ n: results })] }], usage: BUDGET_USAGE }
}

interface Turn {
  sessionId: string
  inputId: string
}

type Row = [label: string, value: string, ok?: boolean]

export async function budgetsChaos(argv: string[]): Promise<number> {
  const quick = argv.includes('--quick')
  const at = argv.indexOf('--rounds')
  const rounds = at >= 0 ? Number(argv[at + 1]) : quick ? 1 : 3
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`chaos --budgets: --rounds takes a positive integer, got ${argv[at + 1]}`)
  const started = Date.now()
  const redis = hasRedisServerBinary() ? await startRedisServer({ hz: 100 }) : undefined
  const redisUrl = redis?.url ?? process.env.REDIS_URL
  if (!redisUrl) throw new Error('chaos --budgets: needs the redis-server binary or REDIS_URL')
  const runId = randomBytes(3).toString('hex')
  const out = (line: string) => process.stderr.write(`[chaos budgets] ${line}\n`)
  const failed: string[] = []
  try {
    for (let r = 0; r < rounds; r++) {
      const roundStarted = Date.now()
      const rows = await round(redisUrl, `chaos-budgets-${runId}-r${r}`, out)
      const bad = rows.filter((row) => row[2] === false)
      failed.push(...bad.map((row) => `round ${r + 1}: ${row[0]}`))
      rows.push(['elapsed', `${((Date.now() - roundStarted) / 1000).toFixed(1)} s`])
      process.stdout.write(`\nround ${r + 1}/${rounds}\n${table(rows)}\n`)
    }
  } finally {
    await redis?.stop()
  }
  for (const f of failed) process.stdout.write(`FAIL ${f}\n`)
  process.stdout.write(
    `${failed.length === 0 ? 'All invariants hold' : 'FAILED'}: ${rounds} rounds in ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
  )
  return failed.length === 0 ? 0 : 1
}

/** One round on its own prefix: the rows of its invariants, with the figures. */
async function round(redisUrl: string, prefix: string, out: (line: string) => void): Promise<Row[]> {
  const server = await startModelServer(answer, { delayMs: DELAY_MS })
  const host = createHarnessHost({ redis: redisUrl, harnesses: [budgeted], prefix, logger: pino({ level: 'silent' }) })
  const client = createRedisClient(redisUrl)
  const spawned: WorkerProcess[] = []
  const spawn = async (budget: number) => {
    const worker = await spawnWorker({
      redisUrl,
      prefix,
      module: MODULE,
      concurrency: CONCURRENCY,
      env: { OPENAI_BASE_URL: server.baseURL, BUDGET_USD: String(budget) },
    })
    spawned.push(worker)
    return worker
  }
  try {
    let workers = await Promise.all(Array.from({ length: WORKERS }, () => spawn(BUDGET_USD)))
    out(`${prefix}: ${WORKERS} workers up, ${TURNS} turns of ${CALLS_A_TURN} calls asked of a ${usd(BUDGET_USD)} budget`)
    const turns = await Promise.all(
      Array.from({ length: TURNS }, async (_, i): Promise<Turn> => {
        const sessionId = `b${i}`
        const { inputId } = await host.open(budgeted, { sessionId }).prompt('work', { principal: PRINCIPAL })
        return { sessionId, inputId }
      }),
    )

    // ---- two SIGKILLs while requests are out: in the first two waves of calls (requests ~12-34) ----
    const kills: Array<{ at: number; requests: number; cut: number }> = []
    const replacements: Array<Promise<WorkerProcess>> = []
    let target = rand(12, 22)
    for (let k = 0; k < 2; k++) {
      // the target-th request has just arrived (it waits 100 ms for its answer); a stall ends the wait
      let last = server.requests.length
      let quietSince = Date.now()
      while (server.requests.length < target && Date.now() - quietSince < 3_000) {
        await sleep(2)
        if (server.requests.length !== last) [last, quietSince] = [server.requests.length, Date.now()]
      }
      const victim = workers[Math.floor(Math.random() * workers.length)]!
      workers = workers.filter((w) => w !== victim)
      const cutBefore = server.cut.length
      const kill = { at: Date.now(), requests: server.requests.length, cut: 0 }
      kills.push(kill)
      await victim.kill('SIGKILL')
      replacements.push(spawn(BUDGET_USD))
      await sleep(150)
      kill.cut = server.cut.length - cutBefore
      target = server.requests.length + rand(6, 12)
    }
    const lastKill = Math.max(...kills.map((k) => k.at))
    out(`killed 2 workers at requests ${kills.map((k) => k.requests).join(', ')} (cut ${kills.map((k) => k.cut).join(' + ')})`)

    // ---- every turn completed or paused at the budget ----
    const stopped = await waitFor(
      () => stopsOf(host, turns),
      (s) => s.running.length === 0,
      STOP_DEADLINE_MS,
    )
    workers.push(...(await Promise.all(replacements)))
    const requests = server.requests.length
    const cut = server.cut.length
    const answered = requests - cut
    const billed = answered * CALL_USD
    const [key, ...otherKeys] = await client.keys(`${prefix}:*:budget:${budgeted.name}:*`)
    const rows: Row[] = []
    if (!key || otherKeys.length) {
      return [['one principal budget hash', `${otherKeys.length + (key ? 1 : 0)} found`, false]]
    }
    const hash = await client.hgetall(key)
    const spentNanos = Number(hash['p/spent/cost'] ?? 0)
    // one call's reservation: the largest estimate a refused call asked for (its prompt and 100 output tokens)
    const estimates = stopped.exceeded.map((e) => Number(e.estimate))
    const reservation = estimates.length ? Math.max(...estimates) : CALL_USD
    const overshoot = spentNanos / 1e9 - BUDGET_USD
    rows.push(
      [
        'turns stopped at the budget',
        `${stopped.completed.length} completed, ${stopped.paused.length} paused, ${stopped.other.length} other, ${stopped.running.length} running`,
        stopped.other.length === 0 && stopped.running.length === 0 && stopped.paused.length > 0,
      ],
      [
        '(1) budget never passed: billed',
        `(${requests} requests - ${cut} cut) x ${usd(CALL_USD)} = ${usd(billed)} <= ${usd(BUDGET_USD)}`,
        billed <= BUDGET_USD + 1e-9,
      ],
      [
        '(1) budget never passed: p/spent/cost',
        `${usd(spentNanos / 1e9)}, overshoot ${usd(overshoot)} (one reservation ${usd(reservation)})`,
        spentNanos <= BUDGET_USD * 1e9 + reservation * 1e9,
      ],
    )

    // ---- (2) what is still held: only killed processes' reservations ----
    const heldAfterPause = await heldReservations(client, prefix, key, turns, lastKill)
    rows.push([
      '(2) held after the pause: only dead tries',
      heldAfterPause.summary,
      heldAfterPause.live.length === 0 && heldAfterPause.consistent,
    ])

    // ---- (3) every request counted, none twice ----
    const bound = kills.length * CONCURRENCY
    const counted = (await host.usage({ principal: PRINCIPAL })).total.calls
    const marked = heldAfterPause.marked.length
    rows.push([
      '(3) counted (+ marked cut tries) vs requests',
      `${counted} + ${marked} = ${counted + marked} of ${requests} requests (at most +${bound}: the killed workers' turns in flight)`,
      counted + marked >= requests && counted + marked <= requests + bound,
    ])

    // ---- (4) the budget raised, every paused turn resumed: all complete, 5 responses each ----
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    workers = await Promise.all(Array.from({ length: WORKERS }, () => spawn(RAISED_USD)))
    let resumed = 0
    for (const turn of stopped.paused) if (await host.open(budgeted, { sessionId: turn.sessionId }).resume(turn.inputId)) resumed++
    const done = await waitFor(
      () => stopsOf(host, turns),
      (s) => s.completed.length + s.other.length === turns.length,
      STOP_DEADLINE_MS,
    )
    const responses = await Promise.all(
      turns.map(async ({ sessionId }) => {
        const entries = await host.open(budgeted, { sessionId }).log.read()
        return {
          responses: records(entries, 'harness.model.response').length,
          settled: records(entries, 'harness.input.settled').length,
          cut: records(entries, 'harness.usage').filter((u) => u.reason === 'cut').length,
        }
      }),
    )
    // the kills cut tries out: each counted once as 'cut' by its turn's next try (the server saw some of
    // them cut; the others were marked sent, their request not yet received)
    const cutTries = responses.reduce((n, t) => n + t.cut, 0)
    rows.unshift([
      'workers SIGKILLed with tries out',
      `${kills.map((k) => `at request ${k.requests} (server: ${k.cut} cut)`).join(', ')}; tries counted 'cut': ${cutTries}`,
      cutTries > 0,
    ])
    const fiveEach = responses.filter((t) => t.responses === CALLS_A_TURN && t.settled === 1).length
    rows.push([
      '(4) resumed with $100: every turn completes',
      `${resumed}/${stopped.paused.length} resumed; ${done.completed.length}/${TURNS} completed, ${fiveEach} with exactly ${CALLS_A_TURN} responses and one settle`,
      resumed === stopped.paused.length && done.completed.length === TURNS && fiveEach === TURNS,
    ])
    const finalRequests = server.requests.length
    const finalCounted = (await host.usage({ principal: PRINCIPAL })).total.calls
    const heldAtEnd = await heldReservations(client, prefix, key, turns, lastKill)
    rows.push(
      [
        '(3) counted vs requests after the resume',
        `${finalCounted} of ${finalRequests} requests (${finalRequests - server.cut.length} answered; at most +${bound})`,
        finalCounted >= finalRequests && finalCounted <= finalRequests + bound,
      ],
      [
        '(2) held after the resume: only dead tries',
        heldAtEnd.summary,
        heldAtEnd.live.length === 0 && heldAtEnd.marked.length === 0 && heldAtEnd.consistent,
      ],
    )
    const finalHash = await client.hgetall(key)
    const spentCalls = Number(finalHash['p/spent/calls'] ?? 0)
    // every counted try settled its reservation once, but those whose settle a kill stopped (the
    // counted cut ones, and maybe some of the dead ones: a response logged just before the kill)
    const settledLow = spentCalls + heldAtEnd.countedCut.length
    rows.push([
      'budget calls settled = tries counted',
      `p/spent/calls ${spentCalls} + counted cut unsettled ${heldAtEnd.countedCut.length} (+ dead <= ${heldAtEnd.dead.length}) vs counted ${finalCounted}`,
      settledLow <= finalCounted && finalCounted <= settledLow + heldAtEnd.dead.length,
    ])
    return rows
  } finally {
    await Promise.all(spawned.map((w) => w.kill('SIGKILL').catch(() => {})))
    await host.close().catch(() => {})
    client.disconnect()
    await server.close()
  }
}

interface Stops {
  completed: Turn[]
  paused: Turn[]
  /** Settled otherwise than completed (failed, aborted). */
  other: Turn[]
  running: Turn[]
  /** The harness.budget.exceeded records of the paused turns. */
  exceeded: Array<Record<string, unknown>>
}

/** Where each turn is: completed, paused (more harness.turn.paused than resumed), settled otherwise, or running. */
async function stopsOf(host: HarnessHost, turns: Turn[]): Promise<Stops> {
  const stops: Stops = { completed: [], paused: [], other: [], running: [], exceeded: [] }
  for (const turn of turns) {
    const entries = await host.open(budgeted, { sessionId: turn.sessionId }).log.read()
    const settled = records(entries, 'harness.input.settled')[0]
    if (settled?.outcome === 'completed') stops.completed.push(turn)
    else if (settled) stops.other.push(turn)
    else if (records(entries, 'harness.turn.paused').length > records(entries, 'harness.turn.resumed').length) {
      stops.paused.push(turn)
      stops.exceeded.push(...records(entries, 'harness.budget.exceeded'))
    } else stops.running.push(turn)
  }
  return stops
}

/** Polls `read` until `done` holds or `timeoutMs` passed: the last value read (the checks then fail on it). */
async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > end) return value
    await sleep(200)
  }
}

/**
 * The reservations the principal's hash still holds, each by who holds it: `marked`, a try still
 * marked on its turn's input (its request went out, its process died; the turn's next try counts and
 * settles it); `countedCut`, a try its next try counted as cut whose settle a kill stopped; `dead`,
 * one reserved before a kill whose settle never came (killed before its request went out, or between
 * its count and its settle: its lease counts it); `live`, any other (reserved after the last kill,
 * no mark): a finding. `consistent`: p/held/calls and p/held/cost are the sums of the reservations.
 */
async function heldReservations(client: RedisClient, prefix: string, key: string, turns: Turn[], lastKill: number) {
  const hash = await client.hgetall(key)
  const trying = new Map<string, Turn>()
  const cut = new Map<string, Turn>()
  for (const turn of turns) {
    const raw = await client.hget(new SessionLog(client, prefix, turn.sessionId).stream.keys.inputs, turn.inputId)
    const input = JSON.parse(raw ?? '{}') as { trying?: { id?: string }; cut?: string }
    if (input.trying?.id) trying.set(input.trying.id, turn)
    if (input.cut) cut.set(input.cut, turn)
  }
  const held = { marked: [] as string[], countedCut: [] as string[], dead: [] as string[], live: [] as string[] }
  let cost = 0
  for (const [field, value] of Object.entries(hash)) {
    if (!field.startsWith('p/r/')) continue
    const [state, nanos, , , deadline] = value.split(' ')
    if (state !== 'h') continue
    cost += Number(nanos)
    const tryId = field.slice('p/r/'.length)
    const reservedAt = Number(deadline) - LEASE_MS
    if (trying.has(tryId)) held.marked.push(tryId)
    else if (reservedAt > lastKill + KILL_SLACK_MS) held.live.push(`${tryId} (reserved ${reservedAt - lastKill} ms after the last kill)`)
    else if (cut.has(tryId)) held.countedCut.push(tryId)
    else held.dead.push(tryId)
  }
  const count = held.marked.length + held.countedCut.length + held.dead.length + held.live.length
  const heldCalls = Number(hash['p/held/calls'] ?? 0)
  const consistent = heldCalls === count && Number(hash['p/held/cost'] ?? 0) === cost
  const summary =
    `p/held/calls ${heldCalls}: ${held.marked.length} cut tries marked on paused turns, ${held.countedCut.length} counted cut unsettled, ` +
    `${held.dead.length} reserved before a kill, ${held.live.length} live${consistent ? '' : ' (held figures != the reservations)'}` +
    (held.live.length ? ` [${held.live.slice(0, 3).join(', ')}]` : '')
  return { ...held, heldCalls, consistent, summary }
}

function table(rows: Row[]): string {
  const w1 = Math.max(...rows.map((r) => r[0].length))
  const w2 = Math.max(...rows.map((r) => r[1].length))
  const lines = [`| ${'check'.padEnd(w1)} | ${'value'.padEnd(w2)} | ok |`, `|${'-'.repeat(w1 + 2)}|${'-'.repeat(w2 + 2)}|----|`]
  for (const [label, value, ok] of rows)
    lines.push(`| ${label.padEnd(w1)} | ${value.padEnd(w2)} | ${ok === undefined ? '  ' : ok ? 'ok' : 'NO'} |`)
  return lines.join('\n')
}
