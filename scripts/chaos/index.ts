// `npm run chaos [-- --quick | --calls N --kills N --workers N --concurrency N --deadline S] [--cluster [--wait]] [--provider-faults] [--liveness] [--codec] [--mcp]`
// `npm run chaos -- --compaction [--trim] [--rounds N] [--quick]`: SIGKILLs during compaction summary calls (compaction.ts)
// `npm run chaos -- --fanout [--rounds N] [--quick]`: SIGKILLs and a Redis restart during fan-outs of child calls and agents (fanout.ts)
// `npm run chaos -- --budgets [--rounds N] [--quick]`: SIGKILLs while 30 turns race for a $1.00 principal budget (budgets.ts)
//
// --liveness: the workers' lock is 30 s (CHAOS_LOCK_MS), so a killed worker's calls and turns run again
// soon only when the other workers find it gone (worker liveness, docs/recovery.md): the run must
// move jobs of gone workers, and must never find the paused worker gone (its connections stay open;
// with that lock its pause does not outlast it, so it makes no zombie either).
//
// --provider-faults: the provider fails 20% of its requests at random (faults.ts: timeouts, 500/502/503,
// dropped connections, some after the side effect was applied), and so does the model, which then is a
// real @tanstack/ai-openai adapter against the provider's OpenAI-compatible route (modelRoute.ts). The
// steps' retry policies and turn.onModelError heal them; the same invariants must hold.
//
// --codec: every process seals what users and models wrote with aesGcmCodec (docs/encryption.md): the
// workers and the calling workers from DH_CODEC_KEYS, this host from the same key; the same invariants must hold.
//
// --mcp: the calling workers also serve the harness over MCP and make their calls as MCP tasks on any
// calling worker's server, each under one idempotency key (mcpCaller.ts, docs/mcp.md): those calls are
// checked as the self calls are, in their `mcp.chaos.*` sessions.
//
// --cluster: the same run on a Redis Cluster of 3 masters with a replica each (DH_SHARDS=3), and instead
// of the Redis restart, one planned failover (CLUSTER FAILOVER on a replica) and later a SIGKILL of
// another master (its replica is promoted after cluster-node-timeout). --wait: step and result writes
// wait for a replica (REDIS_WAIT_REPLICAS=1), so the SIGKILLed master cannot take them with it.
//
// Proves that a crash anywhere never charges a card twice, never loses a tool result and never leaves
// a turn hanging. It runs a private redis-server (AOF, appendfsync always), a fake provider in another
// process (billingServer.ts), K worker processes of the chaos harness (harness.ts) and many sessions
// whose turns each make a batch of 4 calls (checkout: safe, two steps; notify: 'never', one mail step;
// lookup: a plain tool, so 'never'; nap: step.sleep then a step). Meanwhile it SIGKILLs a random worker
// about every second (and starts a replacement), once SIGSTOPs a worker past lockMs + stalledMs and
// lets it go on (a zombie writer: fencing must refuse its writes), once SIGKILLs Redis and restarts it
// from its AOF, and calls host.sweep() every 2 s when the host has it. Then it reads every session log
// and the provider's books and checks the invariants below; the exit code is 1 if any fails.
//
// Replayed keys vs duplicate side effects. The provider refuses a key it has seen (409 + the original
// id), as a real one does. A `safe` step that was cut AFTER its side effect but BEFORE its value was
// stored runs again and sends the SAME key: the provider refuses it, nothing happens twice. Those are
// counted as `replayedKeys`, expected and harmless. A duplicate side effect is one logical thing (an
// order charged, an invoice sent, a mail sent, a lookup made) that SUCCEEDED twice, i.e. under two
// different keys: only a harness bug can do that (an unstable key, a call or turn run twice under new
// ids). That count must be 0. A 'never' tool's side effect must not even be replayed: its key may be
// sent once only, since a cut 'never' call is never run again (also when a zombie wakes up: the zombie
// is the same attempt, and a new attempt of a 'never' call only lands the interrupted error).
//
// Invariants (each a row of the final table):
//   duplicate side effects = 0          provider: no logical side effect succeeded twice
//   cards charged != once = 0           every checkout with a result: exactly 1 charge and 1 invoice
//   results != provider = 0             a checkout's result ids are the ids the provider gave (R1)
//   phantom steps = 0                   every stored charge/invoice/mail step has its provider record
//   'never' side effects re-sent = 0    provider: no mail/lookup key sent twice
//   lost results = 0                    every call of every model response has exactly one harness.tool.result
//   'never' calls cut -> one error each every cut notify/lookup call has exactly one result, the
//                                       'interrupted' tool error, and a stored mail step stays in the log
//   unexpected tool errors = 0          no other tool error (safe calls always end with their result)
//   nap timers restarted = 0            at most one harness.tool.sleep per nap call (R7)
//   turns settled = all, completed      every turn has exactly one harness.input.settled, outcome completed
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { aesGcmCodec, createHarnessHost, createRedisClient, type Settled } from '../../src/index.js'
import type { LogEntry } from '../../src/entries/ops.js'
import { indexKeys, SessionLog } from '../../src/log/index.js'
import {
  spawnWorker,
  startRedisCluster,
  startRedisServer,
  type RedisClusterHandle,
  type RedisServerHandle,
  type WorkerProcess,
} from '../../src/testing/index.js'
import { FAULT_KINDS, type FaultKind } from './faults.js'
import { chaos, PROMPT_PREFIX, type ChaosCall } from './harness.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const HARNESS_MODULE = 'scripts/chaos/harness.ts'
const CALLING_WORKER = 'scripts/chaos/callingWorker.ts'
/** After the turns settled: how long the calling workers' last calls may take to land. */
const SELF_CALLS_LAND_MS = 30_000
const CALLS_PER_TURN = 4
const TURNS_PER_SESSION = 5
const KILL_EVERY_MS = 1_000
const PAUSE_MS = 3_000 // > lockMs + stalledMs (1,000 + 500): the paused worker's jobs are taken over
const REDIS_DOWN_MS = 1_000
const SWEEP_EVERY_MS = 2_000
const FAULT_RATE = 0.2 // --provider-faults

// ---- options ----

function parseArgs(argv: string[]) {
  const opts = { calls: 1_000, kills: 30, workers: 4, concurrency: 10, deadlineS: 600 }
  const quick = argv.includes('--quick')
  const cluster = argv.includes('--cluster')
  const wait = argv.includes('--wait')
  const providerFaults = argv.includes('--provider-faults')
  const liveness = argv.includes('--liveness')
  const codec = argv.includes('--codec')
  const mcp = argv.includes('--mcp')
  if (quick) Object.assign(opts, { calls: 200, kills: 8, deadlineS: 180 })
  const flags: Record<string, keyof typeof opts> = {
    '--calls': 'calls',
    '--kills': 'kills',
    '--workers': 'workers',
    '--concurrency': 'concurrency',
    '--deadline': 'deadlineS',
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (['--quick', '--cluster', '--wait', '--provider-faults', '--liveness', '--codec', '--mcp'].includes(arg)) continue
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(
        'npm run chaos -- [--quick] [--calls N] [--kills N] [--workers N] [--concurrency N] [--deadline SECONDS] [--cluster [--wait]] [--provider-faults] [--liveness] [--codec] [--mcp]\n',
      )
      process.exit(0)
    }
    const [flag, inline] = arg.split('=', 2) as [string, string | undefined]
    const key = flags[flag]
    const value = Number(inline ?? argv[++i])
    if (!key || !Number.isInteger(value) || value < 0) {
      process.stderr.write(`chaos: bad option ${arg} (see --help)\n`)
      process.exit(2)
    }
    opts[key] = value
  }
  if (opts.workers < 1 || opts.calls < 1) {
    process.stderr.write('chaos: --workers and --calls must be at least 1\n')
    process.exit(2)
  }
  return { ...opts, cluster, wait, providerFaults, liveness, codec, mcp }
}

// --fanout: the fan-out variant, a run of its own (fanout.ts)
if (process.argv.includes('--fanout')) {
  const { fanoutChaos } = await import('./fanout.js')
  process.exit(await fanoutChaos(process.argv.slice(2)))
}
// --budgets: the budgets variant, a run of its own (budgets.ts)
if (process.argv.includes('--budgets')) {
  const { budgetsChaos } = await import('./budgets.js')
  process.exit(await budgetsChaos(process.argv.slice(2)))
}
// --compaction: the compaction variant, a run of its own (compaction.ts)
if (process.argv.includes('--compaction')) {
  // --trim: the harness module reads it when it loads, here and in the worker processes
  if (process.argv.includes('--trim')) process.env.DH_CHAOS_TRIM = '1'
  const { compactionChaos } = await import('./compaction.js')
  process.exit(await compactionChaos(process.argv.slice(2)))
}
const opts = parseArgs(process.argv.slice(2))
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
const rand = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1))
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!

// ---- the plan: sessions of sequential turns, each turn a batch of 4 mixed calls ----

interface PlannedTurn {
  sessionId: string
  inputId: string
  at: number // ms after the workers are up
  calls: ChaosCall[]
  settled?: Settled
  failure?: string
}

const runId = randomBytes(3).toString('hex')
const turnsTotal = Math.ceil(opts.calls / CALLS_PER_TURN)
// turns are submitted over longer than the kills take, so the chaos always has work to cut
// (a replacement worker takes 2-3 s to start on 2 vCPUs, and one worker is always left running, so
// kills come about every 2 s in practice)
const spreadMs = Math.max(opts.kills * KILL_EVERY_MS * 2.2, 8_000)
const sessions: PlannedTurn[][] = []
for (let t = 0; t < turnsTotal; t++) {
  const s = Math.floor(t / TURNS_PER_SESSION)
  const sessionId = `chaos-${runId}-s${s}`
  const turn = (sessions[s] ??= []).length
  const calls = Array.from({ length: CALLS_PER_TURN }, (_, j): ChaosCall => {
    const tag = `${s}-${turn}-${j}`
    switch (pick(['checkout', 'notify', 'lookup', 'nap'] as const)) {
      case 'checkout':
        return { name: 'checkout', input: { orderId: `order-${runId}-${tag}` } }
      case 'notify':
        return { name: 'notify', input: { to: `c${tag}-${runId}@example.com` } }
      case 'lookup':
        return { name: 'lookup', input: { sku: `sku-${runId}-${tag}` } }
      case 'nap':
        return { name: 'nap', input: { ms: rand(300, 1_500) } }
    }
  })
  sessions[s]!.push({ sessionId, inputId: `in-${turn}`, at: Math.random() * spreadMs, calls })
}
for (const turns of sessions) turns.sort((a, b) => a.at - b.at)
const allTurns = sessions.flat()

// ---- processes ----

const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
})

async function startBilling(): Promise<{ url: string; proc: ChildProcess; stats(): Promise<BillingStats> }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'scripts/chaos/billingServer.ts'], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  children.add(proc)
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout! })
    rl.once('line', (l) => (rl.close(), resolve(l)))
    proc.once('exit', (code) => reject(new Error(`billing server exited (${code}) before printing its port`)))
  })
  const url = `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}`
  return { url, proc, stats: async () => (await (await fetch(`${url}/stats`)).json()) as BillingStats }
}

interface BillingStats {
  charges: number
  invoices: number
  mails: number
  lookups: number
  replayedKeys: number
  replayedByKind: Record<'charge' | 'invoice' | 'mail' | 'lookup', number>
  duplicateSideEffects: number
  keys: Record<string, { kind: string; logical: string; id: string; hits: number }>
  /** Keys sent again after an injected fault hid the answer (a retried try): refused, harmless. */
  healedReplays: number
  healedByKind: Record<'charge' | 'invoice' | 'mail' | 'lookup', number>
  faults: Record<'billing' | 'model', Record<FaultKind, number>>
  requests: Record<'billing' | 'model', number>
}

interface Worker {
  w: WorkerProcess
  paused: boolean
  /** Woke from the pause: its 'superseded' lines are the zombie's writes refused by fencing, its 'lost its job lock' lines its attempts stopped before a side effect. */
  zombie: boolean
  killedByUs: boolean
  /** Its command connection's name (worker liveness), from its log. */
  connection?: string
}

const counters = {
  kills: 0,
  pauses: 0,
  redisRestarts: 0,
  failovers: 0,
  masterKills: 0,
  fencedLines: 0,
  zombieFenced: 0,
  lockLostLines: 0,
  zombieLockLost: 0,
  crashedWorkers: 0,
  spawnFailures: 0,
  sweeps: 0,
  sweepErrors: 0,
  goneMoves: 0,
  pausedFoundGone: 0,
}
/** The connection names of the workers paused (a job of theirs moved as gone is a finding). */
const pausedConnections = new Set<string>()
let sweepAvailable = false
const sweepRepairs: string[] = []

/** Counts the worker's new log lines; drops them so a long run does not keep them all. */
function scan(worker: Worker): void {
  for (const line of worker.w.lines) {
    if (typeof line.msg === 'string' && line.msg.includes('superseded')) {
      counters.fencedLines++
      if (worker.zombie) counters.zombieFenced++
    }
    if (typeof line.msg === 'string' && line.msg.includes('lost its job lock')) {
      counters.lockLostLines++
      if (worker.zombie) counters.zombieLockLost++
    }
    if (line.msg === 'worker liveness on: other worker processes move its jobs at once if it is gone')
      worker.connection = String(line.connection)
    if (line.msg === 'worker process gone: job moved back to wait') {
      counters.goneMoves++
      if (pausedConnections.has(String(line.owner))) counters.pausedFoundGone++
    }
  }
  worker.w.lines.length = 0
}

// ---- progress on stderr ----

const started = Date.now()
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`
const tty = process.stderr.isTTY === true
let lastPlain = 0
let lastLine = ''
function progress(final = false): void {
  const done = allTurns.filter((t) => t.settled || t.failure).length
  const width = 24
  const filled = Math.round((done / allTurns.length) * width)
  const line =
    `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] turns ${done}/${allTurns.length} | fenced writes ${counters.fencedLines}` +
    ` | kills ${counters.kills} | pauses ${counters.pauses} | ${cluster ? `failovers ${counters.failovers + counters.masterKills}` : `redis restarts ${counters.redisRestarts}`} | ${elapsed()}`
  if (tty) process.stderr.write(`\r\x1b[2K${line}${final ? '\n' : ''}`)
  else if ((final && line !== lastLine) || Date.now() - lastPlain >= 3_000) {
    lastPlain = Date.now()
    lastLine = line
    process.stderr.write(`${line}\n`)
  }
}

// ---- the run ----

// one Redis with AOF, or a Cluster of 3 masters with a replica each (no disk: no node is restarted)
const cluster: RedisClusterHandle | undefined = opts.cluster ? await startRedisCluster({ masters: 3, replicas: 1 }) : undefined
const redis: RedisServerHandle | undefined = cluster ? undefined : await startRedisServer({ appendonly: true, hz: 100 })
// every node is a seed: whichever dies, a starting worker finds the others
const redisUrl = cluster ? cluster.nodes.map((n) => `redis://${n.address}`).join(',') : redis!.url
if (cluster) process.env.DH_SHARDS = '3'
if (opts.wait) Object.assign(process.env, { REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_MS: '200' })
// the billing server (which also serves the faulty model) and the workers read the rate from the env
if (opts.providerFaults) process.env.CHAOS_FAULT_RATE = String(FAULT_RATE)
const billing = await startBilling()
process.env.BILLING_URL = billing.url
const prefix = `chaos-${runId}`
// --codec: every process seals what users and models wrote (the workers from DH_CODEC_KEYS, docs/encryption.md)
const codecKey = randomBytes(32)
if (opts.codec) process.env.DH_CODEC_KEYS = `k1:${codecKey.toString('base64')}`
// the logs this script reads itself open with the same codec
const sealing = opts.codec ? { codec: aesGcmCodec({ keys: { k1: codecKey }, current: 'k1' }) } : {}
const host = createHarnessHost({
  redis: redisUrl,
  harnesses: [chaos],
  prefix,
  logger: pino({ level: 'silent' }),
  ...(opts.wait ? { waitReplicas: { replicas: 1, timeoutMs: 200 } } : {}),
  ...sealing,
})
const workerEnv = {
  BILLING_URL: billing.url,
  LOG_LEVEL: 'info',
  ...(opts.providerFaults ? { CHAOS_FAULT_RATE: String(FAULT_RATE), CHAOS_MODEL_URL: `${billing.url}/v1` } : {}),
  ...(opts.liveness ? { CHAOS_LOCK_MS: '30000' } : {}),
  ...(opts.mcp ? { CHAOS_MCP: '1' } : {}),
}
process.stderr.write(
  `chaos: ${allTurns.length} turns x ${CALLS_PER_TURN} calls in ${sessions.length} sessions,` +
    ` ${opts.workers} workers (concurrency ${opts.concurrency}),` +
    ` >= ${opts.kills} kills; redis ${cluster ? `cluster of 3 masters + 3 replicas${opts.wait ? ', WAIT 1 on steps and results' : ''}` : `${redisUrl} (AOF)`},` +
    ` billing ${billing.url}${opts.providerFaults ? ` (fails ${FAULT_RATE * 100}% of requests, model too)` : ''}, prefix ${prefix}\n`,
)

const workers = new Set<Worker>()
const spawning = new Set<Promise<void>>()

let spawnedWorkers = 0
function startWorker(): Promise<void> {
  const p = (async () => {
    try {
      // every other worker is also a runTool caller of its own (callingWorker.ts): calls it started in their request's write
      const entry = spawnedWorkers++ % 2 === 0 ? { entry: CALLING_WORKER } : {}
      const w = await spawnWorker({ redisUrl, prefix, module: HARNESS_MODULE, concurrency: opts.concurrency, env: workerEnv, ...entry })
      children.add(w.proc)
      const worker: Worker = { w, paused: false, zombie: false, killedByUs: false }
      workers.add(worker)
      // its last lines may still be in the pipe at 'exit'
      w.proc.once('close', () => scan(worker))
      w.proc.once('exit', () => {
        workers.delete(worker)
        children.delete(w.proc)
        if (!worker.killedByUs && !stopping) {
          // a worker that died on its own is a finding: count it and keep the pool full
          counters.crashedWorkers++
          void startWorker()
        }
      })
    } catch (error) {
      counters.spawnFailures++
      process.stderr.write(`\nchaos: a worker failed to start: ${(error as Error).message.slice(0, 300)}\n`)
    }
  })()
  spawning.add(p)
  void p.finally(() => spawning.delete(p))
  return p
}

let stopping = false
await Promise.all(Array.from({ length: opts.workers }, () => startWorker()))
const t0 = Date.now()

const deadline = started + opts.deadlineS * 1_000

// The last turn of each session is also held until the asked kills are done: where replacement
// workers start slowly the kills come slower than spreadMs assumes, and with every turn settled the
// last kills would never happen (29 of 30 on a slower machine, 2026-12-03)
let killsDone: () => void = () => {}
const killsOver = opts.kills === 0 ? Promise.resolve() : new Promise<void>((resolve) => (killsDone = resolve))

/** Each session runs its turns one after another, each submitted no earlier than its planned time. */
async function drive(turns: PlannedTurn[]): Promise<void> {
  const session = host.open(chaos, { sessionId: turns[0]!.sessionId })
  for (const turn of turns) {
    if (turn === turns[turns.length - 1]) await killsOver
    const wait = t0 + turn.at - Date.now()
    if (wait > 0) await sleep(wait)
    try {
      await session.prompt(`${PROMPT_PREFIX}${JSON.stringify(turn.calls)}`, { inputId: turn.inputId })
      turn.settled = await session.settled(turn.inputId, { timeoutMs: Math.max(1, deadline - Date.now()) })
    } catch (error) {
      turn.failure = (error as Error).message
      return // a later turn of this session would fold a hanging one: report, do not pile up
    }
  }
}

const drivers = Promise.all(sessions.map(drive))
let allSettled = false
void drivers.finally(() => (allSettled = true))

async function chaosLoop(): Promise<void> {
  // by time, not by kill count: both land mid-run whatever the kill pace
  const redisAt = t0 + spreadMs * 0.35
  const pauseAt = t0 + spreadMs * 0.6
  const masterKillAt = t0 + spreadMs * 0.5
  let redisDone = opts.kills === 0
  let pauseDone = opts.kills === 0
  let masterKillDone = opts.kills === 0 || !cluster
  while (!allSettled && Date.now() < deadline && (counters.kills < opts.kills || !redisDone || !pauseDone || !masterKillDone)) {
    await sleep(rand(KILL_EVERY_MS * 0.7, KILL_EVERY_MS * 1.3))
    if (allSettled) break
    const live = [...workers].filter((w) => !w.paused)
    if (cluster && !redisDone && Date.now() >= redisAt) {
      // planned failover: a replica takes over its master's slots (no write lost: the master waits for it)
      const roles = await cluster.roles()
      const replica = cluster.nodes.find((n) => roles.get(n.port) === 'slave')!
      await cluster.cli(replica.port, 'cluster', 'failover')
      await until(async () => (await cluster.roles()).get(replica.port) === 'master')
      failedOver.push(`${replica.address} at ${elapsed()}`)
      counters.failovers++
      redisDone = true
      continue
    }
    if (cluster && !masterKillDone && Date.now() >= masterKillAt) {
      // a crash: SIGKILL a master that was not just promoted; its replica is promoted after cluster-node-timeout
      const roles = await cluster.roles()
      const victim = cluster.nodes.find((n) => roles.get(n.port) === 'master' && !failedOver.some((f) => f.startsWith(`${n.address} `)))!
      await victim.kill()
      killedMaster = `${victim.address} at ${elapsed()}`
      counters.masterKills++
      masterKillDone = true
      // once its replica has taken over, it comes back as that one's replica (so WAIT 1 has a replica to count again)
      void (async () => {
        await until(async () => [...(await cluster.roles()).values()].filter((r) => r === 'master').length === 3)
        await victim.restart()
        killedMaster += `, back as a replica at ${elapsed()}`
      })()
      continue
    }
    if (!redisDone && redis && Date.now() >= redisAt) {
      // no worker may be starting while Redis is down: its start-up ping would fail
      await Promise.all([...spawning])
      await redis!.kill()
      await sleep(REDIS_DOWN_MS)
      await redis!.restart()
      counters.redisRestarts++
      redisDone = true
      continue
    }
    if (!pauseDone && Date.now() >= pauseAt && live.length >= 2) {
      const victim = pick(live)
      victim.paused = true
      scan(victim)
      if (victim.connection) pausedConnections.add(victim.connection)
      victim.w.proc.kill('SIGSTOP')
      counters.pauses++
      pauseDone = true
      setTimeout(() => {
        if (victim.w.proc.exitCode !== null || victim.w.proc.signalCode !== null) return
        scan(victim) // lines from before the pause are not the zombie's
        victim.zombie = true
        victim.w.proc.kill('SIGCONT')
        victim.paused = false
        setTimeout(() => (scan(victim), (victim.zombie = false)), 5_000)
      }, PAUSE_MS)
      continue
    }
    if (counters.kills >= opts.kills) continue
    // keep one worker running while replacements start
    if (live.length < 2 || spawning.size >= opts.workers) continue
    const victim = pick(live)
    victim.killedByUs = true
    await victim.w.kill('SIGKILL')
    counters.kills++
    if (counters.kills >= opts.kills) killsDone()
    void startWorker()
  }
  killsDone() // the deadline, or every turn settled: nothing left to hold
}

const failedOver: string[] = []
let killedMaster = ''
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await sleep(100)
}

async function sweepLoop(): Promise<void> {
  const sweeper = host as unknown as { sweep?: (o: { limit: number }) => Promise<unknown> }
  sweepAvailable = typeof sweeper.sweep === 'function'
  if (!sweepAvailable) return
  while (!allSettled && Date.now() < deadline) {
    await sleep(SWEEP_EVERY_MS)
    try {
      const repairs = await sweeper.sweep!({ limit: 1_000 })
      counters.sweeps++
      if (Array.isArray(repairs)) for (const r of repairs as Array<{ reason?: string }>) sweepRepairs.push(r.reason ?? 'unknown')
    } catch {
      counters.sweepErrors++
    }
  }
}

const ticker = setInterval(
  () => {
    for (const w of workers) if (!w.paused) scan(w)
    progress()
  },
  tty ? 200 : 1_000,
)

const loops = Promise.all([chaosLoop(), sweepLoop()])
await Promise.race([drivers, sleep(Math.max(0, deadline - Date.now()))])
allSettled = true
await loops
// the calling workers stop calling; every call they requested lands (a cut one on another worker)
const control = createRedisClient(redisUrl, { maxRetriesPerRequest: null })
await control.set(`${prefix}:chaos:stop-calling`, '1')
await sleep(500)
const selfSessionIds = async () => {
  const shards = Number(process.env.DH_SHARDS ?? 1)
  const ids = await Promise.all(
    Array.from({ length: shards }, (_, shard) => control.zrange(indexKeys(prefix, shard, shards).sessions, '0', '-1')),
  )
  return ids.flat().filter((id) => id.startsWith('self-') || id.startsWith('mcp.'))
}
const selfCallsOpen = async () => {
  let open = 0
  for (const sessionId of await selfSessionIds()) {
    const log = new SessionLog(control, prefix, sessionId, sealing)
    const requested = (await log.stream.read({ types: ['harness.tool.requested'] })).map(
      (e) => (e.record as { toolCallId: string }).toolCallId,
    )
    for (const id of requested) if ((await log.calls.getCall(id))?.status !== 'done') open++
  }
  return open
}
for (const until = Date.now() + SELF_CALLS_LAND_MS; Date.now() < until && (await selfCallsOpen()) > 0;) await sleep(250)
clearInterval(ticker)
for (const w of workers) scan(w)
progress(true)

// ---- verify: read every session log and the provider's books ----

const stats = await billing.stats()
const entriesBySession = new Map<string, LogEntry[]>()
for (const turns of sessions)
  entriesBySession.set(turns[0]!.sessionId, await host.open(chaos, { sessionId: turns[0]!.sessionId }).log.read())
for (const sessionId of await selfSessionIds()) entriesBySession.set(sessionId, await host.open(chaos, { sessionId }).log.read())
control.disconnect()

interface CallFacts {
  sessionId: string
  toolCallId: string
  name: string
  input: Record<string, unknown>
  results: Array<{ result?: unknown; error?: { message: string; code?: string } }>
  steps: Map<string, number>
  sleeps: number
  reasons: string[]
}

const calls: CallFacts[] = []
/** The runTool calls of the calling workers (callingWorker.ts), checked as the turns' calls are. */
const selfCalls: CallFacts[] = []
const settledCount = new Map<string, number>()
const outcomes: Record<string, number> = {}
const retries = { stepRetried: 0, stepEnded: 0, modelRetried: 0 }
for (const [sessionId, entries] of entriesBySession) {
  const byId = new Map<string, CallFacts>()
  const extra = new Map<string, { results: CallFacts['results']; steps: Map<string, number>; sleeps: number; reasons: string[] }>()
  // records of calls that no model response names (none expected here) are kept aside, not dropped
  const factsOf = (id: string) =>
    byId.get(id) ?? extra.get(id) ?? (extra.set(id, { results: [], steps: new Map(), sleeps: 0, reasons: [] }), extra.get(id)!)
  for (const { record: r } of entries) {
    const rec = r as Record<string, unknown>
    switch (r.type) {
      case 'harness.tool.requested':
      case 'harness.model.response':
        for (const c of (r.type === 'harness.model.response' ? rec.toolCalls : [rec]) as Array<{
          toolCallId: string
          name: string
          input: Record<string, unknown>
        }>) {
          const prior = extra.get(c.toolCallId)
          const facts: CallFacts = {
            sessionId,
            toolCallId: c.toolCallId,
            name: c.name,
            input: c.input,
            results: [],
            steps: new Map(),
            sleeps: 0,
            reasons: [],
            ...prior,
          }
          byId.set(c.toolCallId, facts)
          ;(r.type === 'harness.tool.requested' ? selfCalls : calls).push(facts)
        }
        break
      case 'harness.tool.result':
        factsOf(rec.toolCallId as string).results.push({
          ...(rec.result !== undefined ? { result: rec.result } : {}),
          ...(rec.error ? { error: rec.error as { message: string } } : {}),
        })
        break
      case 'harness.tool.step': {
        const steps = factsOf(rec.toolCallId as string).steps
        steps.set(rec.name as string, (steps.get(rec.name as string) ?? 0) + 1)
        break
      }
      case 'harness.tool.sleep':
        factsOf(rec.toolCallId as string).sleeps++
        break
      case 'harness.tool.step.retry':
        if (rec.final === undefined) retries.stepRetried++
        else retries.stepEnded++
        break
      case 'harness.turn.retry':
        retries.modelRetried++
        break
      case 'harness.tool.started':
        factsOf(rec.toolCallId as string).reasons.push(rec.reason as string)
        break
      case 'harness.input.settled': {
        const key = `${sessionId}|${rec.inputId as string}`
        settledCount.set(key, (settledCount.get(key) ?? 0) + 1)
        outcomes[rec.outcome as string] = (outcomes[rec.outcome as string] ?? 0) + 1
        break
      }
    }
  }
}

const turnCalls = calls.length
calls.push(...selfCalls)
const keyOf = (c: CallFacts, step: string) => `${c.sessionId}:${c.toolCallId}:${step}`
const successes = new Map<string, number>()
for (const k of Object.values(stats.keys)) successes.set(`${k.kind}|${k.logical}`, (successes.get(`${k.kind}|${k.logical}`) ?? 0) + 1)
const providerSuccesses = (kind: string, logical: string) => successes.get(`${kind}|${logical}`) ?? 0
const isNever = (c: CallFacts) => c.name === 'notify' || c.name === 'lookup'

const lostResults = calls.filter((c) => c.results.length === 0)
const doubleResults = calls.filter((c) => c.results.length > 1)
const checkouts = calls.filter((c) => c.name === 'checkout' && c.results.length === 1 && !c.results[0]!.error)
const chargedWrong = checkouts.filter((c) => {
  const orderId = String(c.input.orderId)
  return providerSuccesses('charge', orderId) !== 1 || providerSuccesses('invoice', orderId) !== 1
})
const resultMismatch = checkouts.filter((c) => {
  const r = c.results[0]!.result as { chargeId?: string; invoiceId?: string }
  return r.chargeId !== stats.keys[keyOf(c, 'charge')]?.id || r.invoiceId !== stats.keys[keyOf(c, 'invoice')]?.id
})
const phantomSteps = calls.flatMap((c) =>
  [...c.steps.keys()].filter((s) => ['charge', 'invoice', 'mail'].includes(s) && !stats.keys[keyOf(c, s)]).map((s) => keyOf(c, s)),
)
const stepsTwice = calls.filter((c) => [...c.steps.values()].some((n) => n > 1))
const neverResent = stats.replayedByKind.mail + stats.replayedByKind.lookup
const neverRerun = calls.filter((c) => isNever(c) && c.reasons.includes('rerun'))
const cutNever = calls.filter((c) => isNever(c) && c.results.some((r) => r.error?.code === 'interrupted'))
// a cut notify call's mail step, if it was stored, must still be in the log (stored value <-> its record)
const direct = createRedisClient(redisUrl, { maxRetriesPerRequest: null })
const mailStored = new Set<CallFacts>()
for (const c of cutNever) {
  if (c.name === 'notify' && (await new SessionLog(direct, prefix, c.sessionId, sealing).calls.getStep(c.toolCallId, 'mail')).found)
    mailStored.add(c)
}
direct.disconnect()
const cutNeverBad = cutNever.filter((c) => c.results.length !== 1 || (c.name === 'notify' && mailStored.has(c) !== c.steps.has('mail')))
const mailSentNotStored = cutNever.filter((c) => c.name === 'notify' && stats.keys[keyOf(c, 'mail')] && !c.steps.has('mail'))
const unexpectedErrors = calls.filter((c) => c.results.some((r) => r.error && !(isNever(c) && r.error.code === 'interrupted')))
const napRestarted = calls.filter((c) => c.name === 'nap' && c.sleeps > 1)
const safeReruns = calls.filter((c) => !isNever(c) && c.reasons.includes('rerun')).length
const turnsSettled = allTurns.filter((t) => settledCount.get(`${t.sessionId}|${t.inputId}`) === 1).length
const turnsSettledTwice = [...settledCount.values()].filter((n) => n > 1).length
const turnsNotCompleted = allTurns.filter((t) => t.settled?.outcome !== 'completed')

// ---- stop everything ----

stopping = true
await Promise.all([...spawning])
await Promise.all(
  [...workers].map(async (w) => {
    w.killedByUs = true
    if (w.paused) w.w.proc.kill('SIGCONT')
    const done = w.w.kill('SIGTERM')
    const forced = sleep(10_000).then(() => w.w.kill('SIGKILL'))
    await Promise.race([done, forced])
  }),
)
await host.close()
billing.proc.kill('SIGTERM')
await redis?.stop()
await cluster?.stop()

// ---- the table ----

type Row = [label: string, value: string, ok?: boolean]
const plannedCalls = allTurns.length * CALLS_PER_TURN
const replayed = `${stats.replayedKeys} (charge ${stats.replayedByKind.charge}, invoice ${stats.replayedByKind.invoice})`
const cutSummary = `${cutNever.length} (bad ${cutNeverBad.length}; mail step kept ${mailStored.size}, mail sent but not stored ${mailSentNotStored.length})`
const rows: Row[] = [
  ['tool calls (model responses)', `${turnCalls} (planned ${plannedCalls})`, turnCalls === plannedCalls],
  [
    '  checkout / notify / lookup / nap',
    ['checkout', 'notify', 'lookup', 'nap'].map((n) => calls.slice(0, turnCalls).filter((c) => c.name === n).length).join(' / '),
  ],
  [
    `runTool checkouts of the calling workers (${process.env.DH_LOCAL_LANE === 'off' ? 'local lane off: Queue.add' : 'started in their request write'})`,
    `${selfCalls.length} (run again after a cut: ${selfCalls.filter((c) => c.reasons.includes('rerun')).length})`,
  ],
  ...(opts.mcp
    ? [
        [
          '  of them MCP tasks, each under one key (--mcp)',
          `${selfCalls.filter((c) => c.sessionId.startsWith('mcp.')).length}`,
        ] satisfies Row,
      ]
    : []),
  ['workers SIGKILLed (replaced)', `${counters.kills} (asked ${opts.kills})`, counters.kills >= opts.kills],
  ['workers paused past the lock (zombies)', `${counters.pauses}`],
  ['  zombie writes refused by fencing', `${counters.zombieFenced} (all workers: ${counters.fencedLines})`],
  ['  zombie attempts stopped by their lost lock', `${counters.zombieLockLost} (all workers: ${counters.lockLostLines})`],
  ...(cluster
    ? ([
        ['Redis failover: CLUSTER FAILOVER on a replica', `${counters.failovers} (${failedOver.join(', ')})`, counters.failovers === 1],
        [
          'Redis failover: a master SIGKILLed, its replica promoted',
          `${counters.masterKills} (${killedMaster})`,
          counters.masterKills === 1,
        ],
        ['WAIT 1 after step and result writes', opts.wait ? 'on' : 'off'],
      ] satisfies Row[])
    : ([['Redis SIGKILLed + restarted (AOF)', `${counters.redisRestarts}`]] satisfies Row[])),
  ['sweeper passes (in-process)', sweepAvailable ? `${counters.sweeps} (errors ${counters.sweepErrors})` : 'n/a (host.sweep not there)'],
  ['  repairs made by them', sweepRepairs.length ? `${sweepRepairs.length}: ${[...new Set(sweepRepairs)].join(', ')}` : '0'],
  ['workers that died on their own', `${counters.crashedWorkers}`, counters.crashedWorkers === 0],
  [
    `jobs of gone workers moved (worker liveness${opts.liveness ? ', lock 30 s' : ''})`,
    `${counters.goneMoves}`,
    ...(opts.liveness ? [counters.goneMoves > 0] : []),
  ] as Row,
  ['  of the paused worker (never: it was alive)', `${counters.pausedFoundGone}`, counters.pausedFoundGone === 0],
  ['provider: charges / invoices / mails / lookups', `${stats.charges} / ${stats.invoices} / ${stats.mails} / ${stats.lookups}`],
  ['replayed keys (safe re-runs, refused: harmless)', replayed],
  ...(opts.providerFaults ? faultRows() : []),
  ['safe calls run again after a cut', `${safeReruns}`],
  ['duplicate side effects', `${stats.duplicateSideEffects}`, stats.duplicateSideEffects === 0],
  ['cards charged != once (of checkouts)', `${chargedWrong.length} (of ${checkouts.length})`, chargedWrong.length === 0],
  ['checkout results != provider ids', `${resultMismatch.length}`, resultMismatch.length === 0],
  ['phantom steps (stored, never sent)', `${phantomSteps.length}`, phantomSteps.length === 0],
  ['steps stored twice', `${stepsTwice.length}`, stepsTwice.length === 0],
  ["'never' side effects re-sent", `${neverResent}`, neverResent === 0],
  ["'never' calls run again", `${neverRerun.length}`, neverRerun.length === 0],
  ['lost results (no harness.tool.result)', `${lostResults.length}`, lostResults.length === 0],
  ['double results (> 1 harness.tool.result)', `${doubleResults.length}`, doubleResults.length === 0],
  ["'never' calls cut -> interrupted error", cutSummary, cutNeverBad.length === 0],
  ['unexpected tool errors', `${unexpectedErrors.length}`, unexpectedErrors.length === 0],
  ['nap timers restarted', `${napRestarted.length}`, napRestarted.length === 0],
  ['turns settled (exactly once)', `${turnsSettled}/${allTurns.length}`, turnsSettled === allTurns.length],
  ['turns settled twice', `${turnsSettledTwice}`, turnsSettledTwice === 0],
  [
    'turns completed',
    `${allTurns.length - turnsNotCompleted.length}/${allTurns.length} ${JSON.stringify(outcomes)}`,
    turnsNotCompleted.length === 0,
  ],
  ['elapsed', elapsed()],
]
/** The faults injected, and how they healed: a try again under the same key, a model call again. */
function faultRows(): Row[] {
  const byKind = (f: Record<FaultKind, number>) => FAULT_KINDS.map((k) => f[k]).join(' / ')
  const sum = (f: Record<FaultKind, number>) => FAULT_KINDS.reduce((n, k) => n + f[k], 0)
  const share = (what: 'billing' | 'model') =>
    `${sum(stats.faults[what])} of ${stats.requests[what]} (${((100 * sum(stats.faults[what])) / Math.max(1, stats.requests[what])).toFixed(1)}%): ${byKind(stats.faults[what])}`
  const h = stats.healedByKind
  return [
    ['provider faults: timeout / 500 / 502 / 503 / drop', share('billing'), sum(stats.faults.billing) > 0],
    ['model faults: timeout / 500 / 502 / 503 / drop', share('model'), sum(stats.faults.model) > 0],
    [
      '  keys re-sent after a fault (refused: healed)',
      `${stats.healedReplays} (charge ${h.charge}, invoice ${h.invoice}, mail ${h.mail}, lookup ${h.lookup})`,
    ],
    ['  step tries failed, tried again (step.retry)', `${retries.stepRetried}`],
    ['  step retries run out or stopped', `${retries.stepEnded}`, retries.stepEnded === 0],
    ['  model calls tried again (turn.retry)', `${retries.modelRetried}`, retries.modelRetried > 0],
  ]
}

const w1 = Math.max(...rows.map((r) => r[0].length))
const w2 = Math.max(...rows.map((r) => r[1].length))
const out: string[] = [`| ${'check'.padEnd(w1)} | ${'value'.padEnd(w2)} | ok |`, `|${'-'.repeat(w1 + 2)}|${'-'.repeat(w2 + 2)}|----|`]
for (const [label, value, ok] of rows)
  out.push(`| ${label.padEnd(w1)} | ${value.padEnd(w2)} | ${ok === undefined ? '  ' : ok ? 'ok' : 'NO'} |`)
process.stdout.write(`${out.join('\n')}\n`)

const failed = rows.filter((r) => r[2] === false)
const details: string[] = []
const show = (what: string, list: CallFacts[]) => {
  for (const c of list.slice(0, 5)) {
    details.push(
      `${what}: session ${c.sessionId} call ${c.toolCallId} (${c.name}) results ${JSON.stringify(c.results)} starts ${c.reasons.join(',')}`,
    )
  }
}
show('lost result', lostResults)
show('double result', doubleResults)
show('charged != once', chargedWrong)
show('result != provider', resultMismatch)
show('unexpected error', unexpectedErrors)
show('bad cut never call', cutNeverBad)
show('never call run again', neverRerun)
show('nap timer restarted', napRestarted)
for (const k of phantomSteps.slice(0, 5)) details.push(`phantom step: ${k}`)
for (const t of turnsNotCompleted.slice(0, 5)) {
  details.push(`turn ${t.sessionId} ${t.inputId}: ${t.settled ? JSON.stringify(t.settled) : (t.failure ?? 'not settled by the deadline')}`)
}
if (details.length) process.stdout.write(`\n${details.join('\n')}\n`)
process.stdout.write(failed.length === 0 ? '\nAll invariants hold.\n' : `\nFAILED: ${failed.map((r) => r[0].trim()).join('; ')}\n`)
process.exit(failed.length === 0 ? 0 : 1)
