// `npm run chaos -- --fanout [--rounds N] [--quick]` (issue 54): a durable tool fans out 60 child tool
// calls and 6 child agents (test/fixtures/fanout.ts `crew`), N rounds (default 10; --quick 3), over 3
// worker processes of concurrency 2; in each round two workers are SIGKILLed at random points of the
// fan-out and replaced; in the middle round, Redis is SIGKILLed in the fan-out and restarted from its AOF. Each child's side
// effect is counted at a provider of this process by its step's idempotency key. Checked per round:
//   result in order           the parent's result lists every child's, in start order
//   each side effect once     every child's effect under one idempotency key (R23)
//   the tree's count          the root's tree counted 66 children, whatever reran it (R24)
//   the tree's width          never more than 3 child calls at the provider at once (maxConcurrent, R24)
// The exit code is 1 if any fails.
import { randomBytes } from 'node:crypto'
import { pino } from 'pino'
import { createHarnessHost, createRedisClient } from '../../src/index.js'
import { SessionLog } from '../../src/log/index.js'
import { spawnWorker, startRedisServer, type WorkerProcess } from '../../src/testing/index.js'
import { agents, nester, researcher } from '../../test/fixtures/fanout.js'
import { startProvider } from '../../test/helpers/provider.js'

const MODULE = 'test/fixtures/fanout.ts'
const TOOLS = 60
const AGENTS = 6
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

export async function fanoutChaos(argv: string[]): Promise<number> {
  const quick = argv.includes('--quick')
  const at = argv.indexOf('--rounds')
  const rounds = at >= 0 ? Number(argv[at + 1]) : quick ? 3 : 10
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`chaos --fanout: --rounds takes a positive integer, got ${argv[at + 1]}`)
  const started = Date.now()
  const provider = await startProvider(15)
  process.env.PROVIDER_URL = provider.url
  const redis = await startRedisServer({ appendonly: true, hz: 100 })
  const prefix = `chaos-fanout-${randomBytes(3).toString('hex')}`
  const host = createHarnessHost({ redis: redis.url, harnesses: [agents, researcher, nester], prefix, logger: pino({ level: 'silent' }) })
  const spawn = () => spawnWorker({ redisUrl: redis.url, prefix, module: MODULE, concurrency: 2, env: { PROVIDER_URL: provider.url } })
  const workers: WorkerProcess[] = [await spawn(), await spawn(), await spawn()]
  const out = (line: string) => process.stderr.write(`[chaos fanout] ${line}\n`)
  const failures: string[] = []
  const expected = [...Array.from({ length: TOOLS }, (_, n) => n * 2), ...Array.from({ length: AGENTS }, (_, j) => `agent ${1000 + j}`)]
  try {
    for (let r = 0; r < rounds; r++) {
      provider.reset()
      const sessionId = `r${r}`
      const running = host
        .open(agents, { sessionId })
        .runTool({ name: 'crew', input: { tools: TOOLS, agents: AGENTS }, toolCallId: 'crew' }, { timeoutMs: 180_000 })
        .catch((e: unknown) => e)
      for (let k = 0; k < 2; k++) {
        const target = Math.floor(Math.random() * (TOOLS + AGENTS) * 0.8)
        while (provider.starts.length < target) await sleep(10)
        const i = Math.floor(Math.random() * workers.length)
        await workers[i]!.kill('SIGKILL')
        workers[i] = await spawn()
        if (k === 0 && r === Math.floor(rounds / 2)) {
          out(`round ${r + 1}: SIGKILL of Redis in the fan-out, restart from its AOF`)
          await redis.kill()
          await redis.restart()
        }
      }
      const result = await running
      if (JSON.stringify(result) !== JSON.stringify(expected)) failures.push(`round ${r}: result ${JSON.stringify(result).slice(0, 200)}`)
      const keys = new Map<number, Set<string>>()
      for (const s of provider.starts) keys.set(s.n, (keys.get(s.n) ?? new Set()).add(s.tenant))
      if (keys.size !== TOOLS + AGENTS) failures.push(`round ${r}: ${keys.size} children made their effect, not ${TOOLS + AGENTS}`)
      for (const [n, k] of keys) if (k.size !== 1) failures.push(`round ${r}: child ${n} made its effect under ${k.size} keys`)
      const client = createRedisClient(redis.url)
      const count = Number(await client.hget(new SessionLog(client, prefix, sessionId).stream.keys.tree, 'crew\0n'))
      client.disconnect()
      if (count !== TOOLS + AGENTS) failures.push(`round ${r}: the tree counted ${count} children, not ${TOOLS + AGENTS}`)
      const width = widest(provider.starts, provider.ends)
      if (width > 3) failures.push(`round ${r}: ${width} child calls at the provider at once, over maxConcurrent 3`)
      out(`round ${r + 1}/${rounds}: ${keys.size} effects, tree ${count}, width ${width}, ${failures.length} failures so far`)
    }
  } finally {
    for (const w of workers) await w.kill('SIGKILL').catch(() => {})
    await host.close().catch(() => {})
    await redis.stop().catch(() => {})
    await provider.close()
  }
  for (const f of failures) out(`FAIL ${f}`)
  out(`${rounds} rounds, ${failures.length} failures, ${((Date.now() - started) / 1000).toFixed(0)} s`)
  return failures.length === 0 ? 0 : 1
}

/** The most child calls (n < 1000: not a child agent's own call) open at once at the provider. */
function widest(starts: Array<{ at: number; n: number }>, ends: Array<{ at: number; n: number }>): number {
  const edges = [
    ...starts.filter((s) => s.n < 1000).map((s) => ({ at: s.at, d: 1 })),
    ...ends.filter((e) => e.n < 1000).map((e) => ({ at: e.at, d: -1 })),
  ].sort((a, b) => a.at - b.at || a.d - b.d)
  let open = 0
  let most = 0
  for (const e of edges) most = Math.max(most, (open += e.d))
  return most
}
