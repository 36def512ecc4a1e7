// Redis commands per second of one idle worker process (crashHarness.ts, concurrency 10, one shard) on
// a private redis-server, over `seconds`: the commands it sends (MONITOR, by command) and every
// command Redis runs, its scripts' own included (INFO commandstats after CONFIG RESETSTAT). The worker
// process is up (its 'started' line) and has served no job; nothing else talks to that server but
// this reader (its own INFO, CONFIG and MONITOR are left out).
import { Redis } from 'ioredis'
import { spawnWorker, startRedisServer } from '../../src/testing/index.js'
import { openMonitor } from './monitor.js'
import { pause, stderrProgress, type Progress } from './lib.js'

export interface IdleCommands {
  seconds: number
  /** Commands a second the worker sent (scripts count once). */
  sentPerSecond: number
  /** Sent commands a second by command name (a script by its first key's last part). */
  sent: Record<string, number>
  /** Commands a second Redis ran, those inside scripts included. */
  ranPerSecond: number
  /** Ran commands a second by command name. */
  ran: Record<string, number>
}

const MODULE = 'scripts/bench/crashHarness.ts'
const OWN = new Set(['info', 'config|resetstat', 'config', 'monitor'])

/** Row 4c: an idle worker's commands with worker liveness on (the default) and off, one after the other. */
export async function measureIdle(
  options: { quick?: boolean; progress?: Progress } = {},
): Promise<{ on: IdleCommands; off: IdleCommands }> {
  const seconds = options.quick ? 15 : 60
  const on = await measureIdleCommands({ seconds, progress: options.progress })
  const off = await measureIdleCommands({ seconds, progress: options.progress, env: { DH_WORKER_LIVENESS: 'off' } })
  return { on, off }
}

async function measureIdleCommands(
  options: { seconds?: number; progress?: Progress | undefined; env?: Record<string, string> } = {},
): Promise<IdleCommands> {
  const seconds = options.seconds ?? 60
  const progress = options.progress ?? stderrProgress
  const server = await startRedisServer({ appendonly: false })
  const reader = new Redis(server.url, { maxRetriesPerRequest: 1 })
  const worker = await spawnWorker({
    redisUrl: server.url,
    prefix: 'idle',
    module: MODULE,
    concurrency: 10,
    env: { LOG_LEVEL: 'info', ...options.env },
  })
  try {
    // its first moments (script loads, the first fetches, the shard claim) are not idle
    await pause(5_000)
    const sent: Record<string, number> = {}
    const monitor = await openMonitor(server.url, (args, source) => {
      if (source === 'lua' || OWN.has((args[0] ?? '').toLowerCase())) return
      const name = nameOf(args)
      sent[name] = (sent[name] ?? 0) + 1 / seconds
    })
    await reader.config('RESETSTAT')
    progress(`[idle] counting an idle worker's commands for ${seconds} s ${JSON.stringify(options.env ?? {})}`)
    await pause(seconds * 1000)
    monitor.close()
    const ran = parseCommandStats(await reader.info('commandstats'), seconds)
    const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0)
    return { seconds, sentPerSecond: sum(sent), sent, ranPerSecond: sum(ran), ran }
  } finally {
    await worker.kill('SIGKILL')
    reader.disconnect()
    await server.stop()
  }
}

/** A command's name; a script's (EVALSHA/EVAL) with the last part of its first key, which says what it is for. */
function nameOf(args: string[]): string {
  const command = (args[0] ?? '').toLowerCase()
  if (!command.startsWith('eval') || Number(args[2]) === 0) return command
  return `${command} ${(args[3] ?? '').split(':').pop()}`
}

/** `cmdstat_evalsha:calls=12,usec=...` lines → calls a second by command, the reader's own left out. */
function parseCommandStats(info: string, seconds: number): Record<string, number> {
  const out: Record<string, number> = {}
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim())
    if (m && !OWN.has(m[1]!)) out[m[1]!] = Number(m[2]) / seconds
  }
  return out
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const seconds = Number(process.argv[process.argv.indexOf('--seconds') + 1] || 60)
  const r = await measureIdleCommands({ seconds: process.argv.includes('--seconds') ? seconds : 60 })
  const round = (n: number) => Number(n.toFixed(3))
  const sent = Object.fromEntries(Object.entries(r.sent).map(([k, v]) => [k, round(v)]))
  const ran = Object.fromEntries(Object.entries(r.ran).map(([k, v]) => [k, round(v)]))
  const { seconds: s, sentPerSecond, ranPerSecond } = r
  console.log(JSON.stringify({ seconds: s, sentPerSecond: round(sentPerSecond), ranPerSecond: round(ranPerSecond), sent, ran }, null, 1))
}
