/**
 * Append throughput of the session log against plain XADD, measured in one run on one Redis:
 * records/s one call at a time and with 20 calls in flight, 1 and 10 records per call.
 *
 *   npx tsx scripts/bench/appendThroughput.ts [--quick]
 *
 * Uses REDIS_URL, or spawns a private redis-server when it is unset. Progress goes to stderr, the
 * table to stdout. Every key it writes is under one random prefix and is removed at the end.
 */
import { randomBytes } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import { Redis } from 'ioredis'
import { SessionLog, type LogRecord } from '../../src/log/index.js'
import { startRedisServer } from '../../src/testing/redisServer.js'

interface AppendThroughputRow {
  /** What one call does. */
  name: string
  /** 'sequential': await each call; 'inflight': `inflight` calls outstanding on one connection. */
  mode: 'sequential' | 'inflight'
  recordsPerCall: number
  calls: number
  ms: number
  callsPerSec: number
  recordsPerSec: number
  /** recordsPerSec / plain XADD (1 record a call) recordsPerSec in the same mode. */
  vsXadd: number
}

export interface AppendThroughputResult {
  redisUrl: string
  redisVersion: string
  inflight: number
  rows: AppendThroughputRow[]
}

export interface AppendThroughputOptions {
  /** Fewer calls: a smoke run (seconds), figures are noisier. */
  quick?: boolean
  /** Calls outstanding at once in 'inflight' mode. */
  inflight?: number
  /** Progress lines; default: stderr. */
  progress?: (line: string) => void
}

type Call = (i: number) => Promise<unknown>

interface Case {
  name: string
  recordsPerCall: number
  /** Builds the call against fresh keys, so one case never sees another's data. */
  make(tag: string): Promise<Call>
}

const RECORD = { type: 'app.bench', text: 'the quick brown fox jumps over the lazy dog', n: 42 }

export async function measureAppendThroughput(redisUrl: string, options: AppendThroughputOptions = {}): Promise<AppendThroughputResult> {
  const inflight = options.inflight ?? 20
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`))
  // records per case; calls = records / recordsPerCall, so every case writes the same amount
  const records = { sequential: options.quick ? 3_000 : 20_000, inflight: options.quick ? 10_000 : 100_000 }
  const prefix = `bench-append-${randomBytes(4).toString('hex')}`
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  const payload = JSON.stringify(RECORD)

  /** A call begun on fresh keys: the fence that the fenced scripts check. */
  const begun = async (tag: string) => {
    const log = new SessionLog(redis, prefix, tag)
    const { epoch } = await log.calls.beginCall('c1', 'bench', 'safe')
    return { log, fence: { toolCallId: 'c1', epoch } }
  }
  const cases: Case[] = [
    {
      name: 'plain XADD',
      recordsPerCall: 1,
      async make(tag) {
        const key = `${prefix}:{${tag}}:log`
        return () => redis.xadd(key, '*', 'r', payload)
      },
    },
    {
      name: 'plain XADD x10 (one pipeline)',
      recordsPerCall: 10,
      async make(tag) {
        const key = `${prefix}:{${tag}}:log`
        return () => {
          const p = redis.pipeline()
          for (let k = 0; k < 10; k++) p.xadd(key, '*', 'r', payload)
          return p.exec()
        }
      },
    },
    {
      name: 'SessionLog.append (Lua, unfenced)',
      recordsPerCall: 1,
      async make(tag) {
        const log = new SessionLog(redis, prefix, tag)
        return () => log.stream.append([RECORD])
      },
    },
    {
      name: 'saveStep (fenced Lua: step + record)',
      recordsPerCall: 1,
      async make(tag) {
        const { log, fence } = await begun(tag)
        return (i) => log.calls.saveStep(fence, `s${i}`, i, { type: 'harness.tool.step', toolCallId: 'c1', name: `s${i}`, value: i })
      },
    },
    {
      name: 'stageRecords (fenced Lua)',
      recordsPerCall: 1,
      async make(tag) {
        const { log, fence } = await begun(tag)
        // call i stages position i: records are staged by position, so a repeated position would be skipped
        return (i) => log.calls.stageRecords(fence, [RECORD], i)
      },
    },
    {
      name: 'stageRecords x10 (fenced Lua)',
      recordsPerCall: 10,
      async make(tag) {
        const { log, fence } = await begun(tag)
        const ten: LogRecord[] = Array.from({ length: 10 }, () => RECORD)
        return (i) => log.calls.stageRecords(fence, ten, i * 10)
      },
    },
  ]

  try {
    const info = await redis.info('server')
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown'
    const rows: AppendThroughputRow[] = []
    for (const mode of ['sequential', 'inflight'] as const) {
      for (const [n, c] of cases.entries()) {
        const calls = Math.ceil(records[mode] / c.recordsPerCall)
        progress(`[append bench] ${mode === 'sequential' ? 'one at a time' : `${inflight} in flight`}: ${c.name}, ${calls} calls ...`)
        // warm up on its own keys: loads the script (EVALSHA), JIT, connection buffers
        await drive(await c.make(`warm-${mode}-${n}`), Math.min(500, calls), mode === 'sequential' ? 1 : inflight)
        const call = await c.make(`run-${mode}-${n}`)
        const ms = await drive(call, calls, mode === 'sequential' ? 1 : inflight)
        rows.push({
          name: c.name,
          mode,
          recordsPerCall: c.recordsPerCall,
          calls,
          ms,
          callsPerSec: (calls / ms) * 1000,
          recordsPerSec: ((calls * c.recordsPerCall) / ms) * 1000,
          vsXadd: 0,
        })
      }
    }
    for (const row of rows) {
      const base = rows.find((r) => r.mode === row.mode && r.name === 'plain XADD')!
      row.vsXadd = row.recordsPerSec / base.recordsPerSec
    }
    return { redisUrl, redisVersion, inflight, rows }
  } finally {
    await removePrefix(redis, prefix).catch((error) => progress(`[append bench] cleanup failed: ${(error as Error).message}`))
    redis.disconnect()
  }
}

/** Runs `calls` calls with `concurrency` outstanding; returns elapsed ms. */
async function drive(call: Call, calls: number, concurrency: number): Promise<number> {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < calls) await call(next++)
    }),
  )
  return performance.now() - started
}

async function removePrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
    cursor = nextCursor
    if (keys.length > 0) await redis.unlink(...keys)
  } while (cursor !== '0')
}

function formatAppendThroughput(result: AppendThroughputResult): string {
  const header = ['mode', 'call', 'rec/call', 'calls', 'calls/s', 'records/s', 'vs XADD']
  const body = result.rows.map((r) => [
    r.mode === 'sequential' ? 'one at a time' : `${result.inflight} in flight`,
    r.name,
    String(r.recordsPerCall),
    String(r.calls),
    Math.round(r.callsPerSec).toLocaleString('en-US'),
    Math.round(r.recordsPerSec).toLocaleString('en-US'),
    `${r.vsXadd.toFixed(2)}x`,
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)))
  const numeric = new Set([2, 3, 4, 5, 6])
  const line = (cells: string[]) => cells.map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ')
  return [
    `Append throughput, Redis ${result.redisVersion} at ${result.redisUrl}; "vs XADD" = records/s / plain XADD records/s in the same mode`,
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...body.map(line),
  ].join('\n')
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  let url = process.env.REDIS_URL
  let stop: (() => Promise<void>) | undefined
  if (!url) {
    process.stderr.write('[append bench] REDIS_URL is unset: starting a private redis-server (appendonly no)\n')
    const server = await startRedisServer()
    url = server.url
    stop = server.stop
  }
  try {
    const result = await measureAppendThroughput(url, { quick })
    process.stdout.write(`${formatAppendThroughput(result)}\n`)
  } finally {
    await stop?.()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
    process.exitCode = 1
  })
}
