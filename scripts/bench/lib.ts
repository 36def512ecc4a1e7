// Shared helpers of the bench modules: timing summaries, a worker pool, key cleanup, a Redis command
// counter (MONITOR) for round-trip profiles.
import { createHash, randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { scriptShas } from '../../src/log/commands/index.js'
import { openMonitor } from './monitor.js'

export type Progress = (line: string) => void
export const stderrProgress: Progress = (line) => process.stderr.write(`${line}\n`)
export const silentLogger = pino({ level: 'silent' })
export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
export const benchPrefix = (label: string) => `bench-${label}-${randomBytes(3).toString('hex')}`

/** Latency summary in ms. */
export interface Summary {
  n: number
  p50: number
  p90: number
  p99: number
  min: number
  max: number
  mean: number
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export function summarize(samples: number[]): Summary {
  const s = [...samples].sort((a, b) => a - b)
  const round = (x: number) => Math.round(x * 1000) / 1000
  return {
    n: s.length,
    p50: round(percentile(s, 50)),
    p90: round(percentile(s, 90)),
    p99: round(percentile(s, 99)),
    min: round(s[0]!),
    max: round(s.at(-1)!),
    mean: round(s.reduce((a, b) => a + b, 0) / s.length),
  }
}

/** Runs `fn` over 0..n-1 with at most `width` in flight; returns elapsed ms. */
/** Runs `fn` `n` times one after another, pushing each run's ms to `into`. */
export async function timeEach(into: number[], n: number, fn: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await fn()
    into.push(performance.now() - t0)
  }
}

export async function pool(n: number, width: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) await fn(next++)
    }),
  )
  return performance.now() - t0
}

/** Removes every key that contains `prefix` (session keys and BullMQ keys alike). */
export async function deletePrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) await redis.unlink(...keys)
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}

/** MEMORY USAGE (exact: SAMPLES 0) of every key of the prefix. */
export async function keySizes(redis: Redis, prefix: string): Promise<Map<string, number>> {
  const sizes = new Map<string, number>()
  let cursor = '0'
  do {
    const [c, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
    cursor = c
    const pipeline = redis.pipeline()
    for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', '0')
    const replies = (await pipeline.exec()) ?? []
    keys.forEach((key, i) => sizes.set(key, Number(replies[i]?.[1] ?? 0)))
  } while (cursor !== '0')
  return sizes
}

/**
 * used_memory freed, a call, by deleting each kind of key the calls made (`kindOf` names a key's kind,
 * or undefined for a key they share): what a call costs by key in used_memory. MEMORY USAGE over- or
 * under-counts it (a stream's nodes; the keyspace's own entry and an expiry's). A shared sorted set
 * gives up the members `ours` accepts; other shared keys stay. Run it with the workers stopped.
 */
export async function freedByKind(
  redis: Redis,
  prefix: string,
  n: number,
  kindOf: (key: string) => string | undefined,
  ours: (member: string) => boolean,
): Promise<Record<string, number>> {
  const kinds = new Map<string, string[]>()
  const shared: string[] = []
  for (const key of (await keySizes(redis, prefix)).keys()) {
    const kind = kindOf(key.slice(prefix.length + 1))
    if (kind === undefined) shared.push(key)
    else kinds.set(kind, [...(kinds.get(kind) ?? []), key])
  }
  const freed: Record<string, number> = {}
  const measure = async (kind: string, free: () => Promise<unknown>) => {
    const before = await usedMemory(redis)
    await free()
    const bytes = Math.round((before - (await usedMemory(redis))) / n)
    if (Math.abs(bytes) >= 2) freed[kind] = bytes
  }
  for (const [kind, keys] of kinds) {
    await measure(kind, async () => {
      for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500))
    })
  }
  for (const key of shared) {
    if ((await redis.type(key)) !== 'zset') continue
    const members = (await redis.zrange(key, '0', '-1')).filter(ours)
    if (members.length === 0) continue
    await measure(key.slice(prefix.length + 1), async () => {
      for (let i = 0; i < members.length; i += 500) await redis.zrem(key, ...members.slice(i, i + 500))
    })
  }
  return freed
}

/** Redis's `used_memory` in bytes (INFO memory). */
export const usedMemory = async (redis: Redis) => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1])

export async function redisVersion(redisUrl: string): Promise<string> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  try {
    return /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown'
  } finally {
    redis.disconnect()
  }
}

/** INFO commandstats: command -> { calls, usec } (Lua-internal calls count under their own command). */
export async function commandStats(redis: Redis): Promise<Record<string, { calls: number; usec: number }>> {
  const out: Record<string, { calls: number; usec: number }> = {}
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_(\S+?):calls=(\d+),usec=(\d+)/gm)) {
    out[m[1]!] = { calls: Number(m[2]), usec: Number(m[3]) }
  }
  return out
}

/** redis-server process CPU time (user + sys), µs: commands, Lua, networking. */
export async function serverUsec(redis: Redis): Promise<number> {
  const info = await redis.info('cpu')
  const get = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0)
  return (get('used_cpu_user') + get('used_cpu_sys')) * 1e6
}

/** CPU µs spent while `measure` ran: this Node process's (all its threads) and redis-server's. */
export interface OwnCpu {
  userUs: number
  systemUs: number
  /** All of redis-server's clients: only this run's on a private Redis. */
  serverUs: number
}

/** Runs `measure` between two readings of process.cpuUsage and redis-server's INFO cpu (on `stats`). */
export async function withOwnCpu<T>(stats: Redis, measure: () => Promise<T>): Promise<{ result: T; cpu: OwnCpu }> {
  const cpu0 = process.cpuUsage()
  const server0 = await serverUsec(stats)
  const result = await measure()
  const cpu = process.cpuUsage(cpu0)
  const serverUs = (await serverUsec(stats)) - server0
  return { result, cpu: { userUs: cpu.user, systemUs: cpu.system, serverUs } }
}

/** Workers as drainWith needs them: the host's WorkersHandle, the floor's, a test's. */
export interface Drainable {
  workers: ReadonlyArray<{ name: string; on(event: 'completed', listener: () => void): unknown }>
  close(): Promise<unknown>
}

/** Starts workers on pre-enqueued work; ms from their start to the `jobs`-th completion of a queue named `queue…`. */
export async function drainWith(start: () => Drainable, queue: string, jobs: number): Promise<number> {
  const t0 = performance.now()
  const handle = start()
  await new Promise<void>((resolve) => {
    let done = 0
    for (const w of handle.workers.filter((w) => w.name.startsWith(queue)))
      w.on('completed', () => {
        if (++done === jobs) resolve()
      })
  })
  const ms = performance.now() - t0
  await handle.close()
  return ms
}

/** Redis PING round trips, one at a time on one connection, in ms. */
export async function pingSamples(redis: Redis, n: number): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await redis.ping()
    out.push(performance.now() - t0)
  }
  return out
}

/**
 * What the clients of a bench send to Redis while `op` runs `ops` times, from MONITOR: client
 * commands (each one a round trip unless pipelined; a MULTI…EXEC block counts one), commands run
 * inside Lua scripts, by name and by connection. Only commands that name `prefix` count (other users
 * of a shared Redis are ignored); what the same connections send while idle for as long is
 * subtracted (blocking pops that time out, stalled-job checks, lock renewals).
 */
export interface CommandProfile {
  ops: number
  /**
   * Client commands per op: EVALSHA counts one, a MULTI…EXEC block one. Pipelined commands count one
   * each (MONITOR cannot tell them apart): BullMQ's addBulk sends its N scripts in one write.
   */
  commandsPerOp: number
  /** Commands run inside Lua scripts per op (each a Redis call, no network). */
  luaCallsPerOp: number
  /** Client commands per op, by command name (EVALSHA by script, as its first key's last part). */
  byCommand: Record<string, number>
  /** Commands per op, by connection (connections numbered in order of first use). */
  byConnection: Record<string, number>
  idleCommandsSubtracted: number
}

export async function profileCommands(
  redisUrl: string,
  prefix: string,
  ops: number,
  op: (i: number) => Promise<unknown>,
): Promise<CommandProfile> {
  const names = new Map<string, string>()
  let counting: Counts | null = null
  const inMulti = new Map<string, { prefixed: boolean }>()
  const monitor = await openMonitor(redisUrl, (args, source) => {
    const c = counting
    if (!c) return
    const cmd = String(args[0] ?? '').toUpperCase()
    if (source === 'lua') {
      if (args.some((a) => String(a).includes(prefix))) c.lua++
      return
    }
    if (cmd === 'MULTI') return void inMulti.set(source, { prefixed: false })
    const multi = inMulti.get(source)
    if (cmd === 'EXEC') {
      inMulti.delete(source)
      if (multi?.prefixed) c.add(source, 'MULTI/EXEC', names, true)
      return
    }
    if (!args.slice(1).some((a) => String(a).includes(prefix))) return
    if (multi) multi.prefixed = true
    c.add(source, label(cmd, args), names, !multi)
  })
  await pause(50)
  try {
    // idle: what the same clients send on their own in as long as the ops take
    counting = new Counts()
    const t0 = performance.now()
    for (let i = 0; i < ops; i++) await op(i)
    const busy = counting
    const elapsed = performance.now() - t0
    await pause(100) // MONITOR lines trail the replies
    counting = new Counts()
    await pause(Math.min(elapsed, 5_000))
    const idle = counting
    counting = null
    const idleScale = elapsed / Math.min(elapsed, 5_000)
    const idleTrips = idle.trips * idleScale
    const perOp = (x: number) => Math.round((x / ops) * 100) / 100
    const byCommand: Record<string, number> = {}
    for (const [k, v] of busy.byCommand) byCommand[k] = perOp(Math.max(0, v - (idle.byCommand.get(k) ?? 0) * idleScale))
    const byConnection: Record<string, number> = {}
    for (const [k, v] of busy.byConnection) byConnection[k] = perOp(Math.max(0, v - (idle.byConnection.get(k) ?? 0) * idleScale))
    return {
      ops,
      commandsPerOp: perOp(Math.max(0, busy.trips - idleTrips)),
      luaCallsPerOp: perOp(Math.max(0, busy.lua - idle.lua * idleScale)),
      byCommand,
      byConnection,
      idleCommandsSubtracted: Math.round(idleTrips),
    }
  } finally {
    monitor.close()
  }
}

class Counts {
  trips = 0
  lua = 0
  byCommand = new Map<string, number>()
  byConnection = new Map<string, number>()
  add(source: string, name: string, names: Map<string, string>, trip: boolean) {
    if (!names.has(source)) names.set(source, `conn${names.size + 1}`)
    this.byCommand.set(name, (this.byCommand.get(name) ?? 0) + 1)
    if (!trip) return
    this.trips++
    const conn = names.get(source)!
    this.byConnection.set(conn, (this.byConnection.get(conn) ?? 0) + 1)
  }
}

let shaNames: Map<string, string> | undefined

/** sha1 -> script name of our Lua commands and BullMQ's (as `bullmq:<name>`). */
function scriptNames(): Map<string, string> {
  if (shaNames) return shaNames
  shaNames = scriptShas()
  const require = createRequire(import.meta.url)
  type Script = { name: string; content: string }
  const bull = require(join(dirname(require.resolve('bullmq')), 'scripts', 'index.js')) as Record<string, Script>
  for (const { name, content } of Object.values(bull)) shaNames.set(createHash('sha1').update(content).digest('hex'), `bullmq:${name}`)
  return shaNames
}

/** EVALSHA is named by its script. */
function label(cmd: string, args: string[]): string {
  if (cmd === 'EVAL') return `EVAL(${scriptNames().get(createHash('sha1').update(String(args[1])).digest('hex')) ?? '?'})`
  if (cmd !== 'EVALSHA') return cmd
  return `EVALSHA(${scriptNames().get(String(args[1]).toLowerCase()) ?? String(args[1]).slice(0, 8)})`
}
