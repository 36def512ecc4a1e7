import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { LockDoubt } from '../call/index.js'
import { ConfigError } from '../errors/index.js'
import { LIVE_TOKEN } from '../lane/index.js'
import { isCluster, type RedisClient } from '../log/index.js'

/** How often the event loop's ticker runs, and the gap between two ticks that counts as a stall. */
const TICK_MS = 100
export const STALL_MS = 200

/**
 * Whether worker liveness is on: `option` when given (HostOptions.workerLiveness), else
 * DH_WORKER_LIVENESS (`on` or `off`, default on). A bad DH_WORKER_LIVENESS is a ConfigError.
 */
export function workerLivenessEnabled(option: boolean | undefined, env = process.env.DH_WORKER_LIVENESS): boolean {
  if (option !== undefined) return option
  const value = (env ?? '').trim().toLowerCase()
  if (value === '' || value === 'on') return true
  if (value === 'off') return false
  throw new ConfigError(
    `DH_WORKER_LIVENESS=${JSON.stringify(env)}: use "on" or "off" (off: a dead worker's jobs wait for their lock to expire).`,
  )
}

/**
 * One host's identity as a worker process that other processes can find gone (docs/decisions/worker-liveness.md).
 * Its command connection, the one its job locks are renewed on, is named `dh-live-<id>` (CLIENT SETNAME,
 * sent again on every reconnect; BullMQ's blocking connections are copies of it), and its workers'
 * lock tokens begin with `dh-live-<id>-`: a job whose token names a process with no connection left
 * belongs to a process that is gone (SIGKILL, OOM: its sockets close at once; a paused or partitioned
 * process keeps them). It is also this process's doubt of its own locks: once its command connection
 * closed, another process may have found it gone, so each lock is confirmed again before the next
 * side effect (attemptLock.ts); after a stall of its event loop, a side effect first waits for the
 * loop to read what came meanwhile, so a close during a pause is seen before the paused code goes on.
 */
export class ProcessLiveness implements LockDoubt {
  readonly id = randomBytes(8).toString('hex')
  /** The name of the host's command connection. */
  readonly connectionName = `${LIVE_TOKEN}${this.id}`
  /** The head of this process's workers' ids, and so of their lock tokens. */
  readonly tokenPrefix = `${this.connectionName}-`
  private doubted = 0
  private lastTick = Date.now()
  private stalled = false
  private readyAt: number | undefined
  private ticker: NodeJS.Timeout | undefined
  private watched = 0

  /** The connection name a token's process had (undefined for a token of no process named so). */
  static connectionOf(token: string): string | undefined {
    const match = /^(dh-live-[0-9a-f]{16})-/.exec(token)
    return match?.[1]
  }

  doubtedAt(): number {
    return this.doubted
  }

  caughtUp(): Promise<void> | undefined {
    // woken from a stall, the loop runs its due timers before it reads its sockets: a setImmediate
    // callback runs after that read, so a connection that closed meanwhile has been seen by then
    if (!this.ticker || (!this.stalled && Date.now() - this.lastTick <= STALL_MS)) return undefined
    return new Promise<void>((resolve) => setImmediate(resolve))
  }

  /** Whether this process's connection has been up at least `ms` (right after a reconnect, other processes may still be reconnecting). */
  connectedFor(ms: number): boolean {
    return this.readyAt !== undefined && Date.now() - this.readyAt >= ms
  }

  /**
   * Watches `redis`, the host's command connection, while workers run: its close casts doubt on every
   * lock; a ticker every TICK_MS notes stalls of the event loop (caughtUp); returns the unwatch.
   */
  watch(redis: RedisClient): () => void {
    const nodes = new Set<Redis>()
    const ready = () => (this.readyAt = Date.now())
    const closed = () => {
      this.doubted = Date.now()
      this.readyAt = undefined
    }
    const attach = (node: Redis) => {
      nodes.add(node)
      node.on('ready', ready).on('close', closed)
      if (node.status === 'ready') ready()
    }
    if (isCluster(redis)) {
      redis.nodes().forEach(attach)
      redis.on('+node', attach)
    } else attach(redis)
    if (this.watched++ === 0) this.startTicker()
    return () => {
      for (const node of nodes) node.off('ready', ready).off('close', closed)
      if (isCluster(redis)) redis.off('+node', attach)
      if (--this.watched === 0) this.stopTicker()
    }
  }

  private startTicker(): void {
    this.lastTick = Date.now()
    this.ticker = setInterval(() => {
      const now = Date.now()
      // a stall is over once the loop has read its sockets (after the timers: setImmediate)
      if (now - this.lastTick > STALL_MS && !this.stalled) {
        this.stalled = true
        setImmediate(() => (this.stalled = false))
      }
      this.lastTick = now
    }, TICK_MS)
    this.ticker.unref()
  }

  private stopTicker(): void {
    clearInterval(this.ticker)
    this.ticker = undefined
  }
}
