// A throw-away Redis Cluster for tests, the chaos run and the bench: `masters` masters (and `replicas`
// replicas each) started from the redis-server binary on free ports, no data on disk, joined with
// `redis-cli --cluster create`, which gives each master an equal run of slots. Node built-ins only.
import { spawn } from 'node:child_process'
import { startRedisServer, type RedisServerHandle } from './redisServer.js'

/** One node of a test Redis Cluster. */
export interface ClusterNodeHandle extends RedisServerHandle {
  /** `127.0.0.1:<port>` */
  address: string
}

/** A running test Redis Cluster: its nodes, the seed URLs, and stop. */
export interface RedisClusterHandle {
  /** Every node, masters first (as created; a failover changes roles, see `roles()`). */
  nodes: ClusterNodeHandle[]
  /** The seed nodes as a comma-separated list of URLs: what createHarnessHost and REDIS_CLUSTER_NODES take. */
  url: string
  /** Runs `redis-cli -p <port> <args>` against one node and returns its output. */
  cli(port: number, ...args: string[]): Promise<string>
  /** The current role of each node, by port. */
  roles(): Promise<Map<number, 'master' | 'slave' | 'down'>>
  /** Waits until every live node reports `cluster_state:ok` and agrees on the masters. */
  waitHealthy(timeoutMs?: number): Promise<void>
  stop(): Promise<void>
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${out}`))))
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Starts a Redis Cluster from the `redis-server` binary on free ports (no data on disk), for tests. */
export async function startRedisCluster(
  opts: { masters?: number; replicas?: number; nodeTimeoutMs?: number } = {},
): Promise<RedisClusterHandle> {
  const masters = opts.masters ?? 3
  const replicas = opts.replicas ?? 0
  const args = [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    String(opts.nodeTimeoutMs ?? 2_000),
    // a master that lost its slots' replicas keeps serving the others
    '--cluster-require-full-coverage',
    'no',
  ]
  const nodes: ClusterNodeHandle[] = []
  const stop = async () => void (await Promise.all(nodes.map((n) => n.stop())))
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const server = await startRedisServer({ appendonly: false, args })
      nodes.push({ ...server, address: `127.0.0.1:${server.port}` })
    }
    const cli = (port: number, ...a: string[]) => run('redis-cli', ['-p', String(port), ...a])
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', String(replicas), '--cluster-yes'])
    const handle: RedisClusterHandle = {
      nodes,
      url: nodes
        .slice(0, masters)
        .map((n) => `redis://${n.address}`)
        .join(','),
      cli,
      async roles() {
        const roles = new Map<number, 'master' | 'slave' | 'down'>()
        for (const node of nodes) {
          const info = await cli(node.port, 'role').catch(() => '')
          roles.set(node.port, info.startsWith('master') ? 'master' : info.startsWith('slave') ? 'slave' : 'down')
        }
        return roles
      },
      async waitHealthy(timeoutMs = 30_000) {
        const deadline = Date.now() + timeoutMs
        for (;;) {
          const states = await Promise.all(
            nodes.map(async (n) => {
              const info = await cli(n.port, 'cluster', 'info').catch(() => null)
              return info === null ? 'down' : /cluster_state:ok/.test(info) ? 'ok' : 'fail'
            }),
          )
          const live = states.filter((s) => s !== 'down')
          const byPort = await handle.roles()
          const roles = [...byPort.values()]
          // a replica that has not synced cannot take over its master
          const synced = await Promise.all(
            nodes
              .filter((n) => byPort.get(n.port) === 'slave')
              .map(async (n) => /master_link_status:up/.test(await cli(n.port, 'info', 'replication').catch(() => ''))),
          )
          if (
            live.length > 0 &&
            live.every((s) => s === 'ok') &&
            roles.filter((r) => r === 'master').length >= masters &&
            synced.every(Boolean)
          )
            return
          if (Date.now() > deadline) throw new Error(`Redis Cluster not healthy within ${timeoutMs} ms: ${states.join(',')}`)
          await sleep(100)
        }
      },
      stop,
    }
    await handle.waitHealthy()
    return handle
  } catch (error) {
    await stop()
    throw error
  }
}
