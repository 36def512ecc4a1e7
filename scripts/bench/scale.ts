// Scaling figures (`npm run bench -- --scale`): durable calls/s with 1, 2 and 4 worker processes
// against one Redis and against a 3-master Redis Cluster (DH_SHARDS=3), with each redis-server's CPU
// share over the run (from /proc/<pid>/stat), Redis CPU µs and commands per durable call, and the
// commands each master served (the Cluster's load balance). Then the cost of WAIT 1 after step and
// result writes, on a Cluster with a replica per master. A durable call is runTool of a 1-step tool
// from the bench process (64 in flight) to worker processes (concurrency 20 each).
import { readFileSync } from 'node:fs'
import { pino } from 'pino'
import { createHarnessHost, createRedisClient, type RedisClient } from '../../src/index.js'
import { isCluster } from '../../src/log/index.js'
import { spawnWorker, startRedisCluster, startRedisServer, type WorkerProcess } from '../../src/testing/index.js'
import { serverPid } from '../../src/testing/redisProbe.js'
import { benchPrefix, pool, summarize, type Progress } from './lib.js'
import { scaleHarness } from './scaleHarness.js'

const CALLERS = 64
const WORKER_CONCURRENCY = 20
const TICKS_PER_S = 100 // USER_HZ on Linux

export interface ScaleRow {
  target: 'one Redis' | 'Cluster (3 masters)' | 'Cluster (3 masters + 3 replicas)'
  workers: number
  wait: boolean
  calls: number
  seconds: number
  callsPerSec: number
  p50Ms: number
  /** Each redis-server's CPU over the run, as a share of one core, by node address. */
  redisCpu: Record<string, number>
  redisCpuUsPerCall: number
  commandsPerCall: number
  /** Commands each master served during the run. */
  commandsByMaster: Record<string, number>
}

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return Number(fields[11]) + Number(fields[12]) // utime + stime (fields 14 and 15 of stat)
}

async function masters(client: RedisClient): Promise<Array<{ address: string; node: RedisClient }>> {
  if (!isCluster(client)) return [{ address: `${client.options.host}:${client.options.port}`, node: client }]
  await client.ping()
  return client.nodes('master').map((node) => ({ address: `${node.options.host}:${node.options.port}`, node }))
}

async function totalCommands(node: RedisClient): Promise<number> {
  const info = await node.info('stats')
  return Number(/total_commands_processed:(\d+)/.exec(info)![1])
}

async function runOne(
  url: string,
  target: ScaleRow['target'],
  nodes: Array<{ address: string; pid: number }>,
  workerCount: number,
  calls: number,
  wait: boolean,
  progress: Progress,
): Promise<ScaleRow> {
  const shards = target === 'one Redis' ? 1 : 3
  const prefix = benchPrefix(`scale-${workerCount}`)
  const env = { DH_SHARDS: String(shards), ...(wait ? { REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_MS: '200' } : {}) }
  const workers: WorkerProcess[] = await Promise.all(
    Array.from({ length: workerCount }, () =>
      spawnWorker({ redisUrl: url, prefix, module: 'scripts/bench/scaleHarness.ts', concurrency: WORKER_CONCURRENCY, env }),
    ),
  )
  const host = createHarnessHost({ redis: url, harnesses: [scaleHarness], prefix, shards, logger: pino({ level: 'silent' }) })
  const admin = createRedisClient(url)
  try {
    const call = (i: number) => host.open(scaleHarness, { sessionId: `s-${i % 512}` }).runTool({ name: 'work', input: { i } })
    await pool(200, CALLERS, (i) => call(-1 - i)) // warm-up: connections, scripts, queues of every shard
    const byMaster = await masters(admin)
    const before = { ticks: nodes.map((n) => cpuTicks(n.pid)), commands: await Promise.all(byMaster.map((m) => totalCommands(m.node))) }
    const latencies: number[] = []
    const t0 = performance.now()
    await pool(calls, CALLERS, async (i) => {
      const start = performance.now()
      await call(i)
      latencies.push(performance.now() - start)
    })
    const seconds = (performance.now() - t0) / 1000
    const ticks = nodes.map((n, i) => cpuTicks(n.pid) - before.ticks[i]!)
    const commands = (await Promise.all(byMaster.map((m) => totalCommands(m.node)))).map((c, i) => c - before.commands[i]! - 1)
    const row: ScaleRow = {
      target,
      workers: workerCount,
      wait,
      calls,
      seconds,
      callsPerSec: calls / seconds,
      p50Ms: summarize(latencies).p50,
      redisCpu: Object.fromEntries(nodes.map((n, i) => [n.address, ticks[i]! / TICKS_PER_S / seconds])),
      redisCpuUsPerCall: (ticks.reduce((a, b) => a + b, 0) / TICKS_PER_S / calls) * 1e6,
      commandsPerCall: commands.reduce((a, b) => a + b, 0) / calls,
      commandsByMaster: Object.fromEntries(byMaster.map((m, i) => [m.address, commands[i]!])),
    }
    progress(
      `  ${target}, ${workerCount} worker(s)${wait ? ', WAIT 1' : ''}: ${Math.round(row.callsPerSec)} calls/s, p50 ${row.p50Ms.toFixed(1)} ms, ` +
        `redis CPU ${Object.values(row.redisCpu)
          .map((c) => `${Math.round(c * 100)}%`)
          .join('/')}, ${Math.round(row.redisCpuUsPerCall)} µs and ${row.commandsPerCall.toFixed(1)} commands a call`,
    )
    return row
  } finally {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await host.close()
    admin.disconnect()
  }
}

export async function measureScale(options: { calls: number; workerCounts: number[]; progress: Progress }): Promise<ScaleRow[]> {
  const { calls, workerCounts, progress } = options
  const rows: ScaleRow[] = []
  // one Redis
  const server = await startRedisServer({ hz: 100 })
  try {
    const nodes = [{ address: `127.0.0.1:${server.port}`, pid: (await serverPid(server.url, 1_000))! }]
    for (const n of workerCounts) rows.push(await runOne(server.url, 'one Redis', nodes, n, calls, false, progress))
  } finally {
    await server.stop()
  }
  // a 3-master Cluster
  const cluster = await startRedisCluster({ masters: 3 })
  try {
    const nodes = await Promise.all(
      cluster.nodes.map(async (n) => ({ address: n.address, pid: (await serverPid(`redis://${n.address}`, 1_000))! })),
    )
    for (const n of workerCounts) rows.push(await runOne(cluster.url, 'Cluster (3 masters)', nodes, n, calls, false, progress))
  } finally {
    await cluster.stop()
  }
  // the cost of WAIT: a Cluster with a replica per master, 2 workers, without and with WAIT 1
  const replicated = await startRedisCluster({ masters: 3, replicas: 1 })
  try {
    const nodes = await Promise.all(
      replicated.nodes.map(async (n) => ({ address: n.address, pid: (await serverPid(`redis://${n.address}`, 1_000))! })),
    )
    for (const wait of [false, true])
      rows.push(await runOne(replicated.url, 'Cluster (3 masters + 3 replicas)', nodes, 2, calls, wait, progress))
  } finally {
    await replicated.stop()
  }
  return rows
}
