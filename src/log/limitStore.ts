import { StorageError } from '../errors/index.js'
import type { RedisClient } from './client.js'
import { runScript, scripts } from './commands/index.js'

/** One limit as the store applies it: its bounds in numbers (0: no such bound). */
export interface LimitBounds {
  concurrency: number
  rateLimit: number
  perMs: number
  /** A slot's lease: the job lock. A slot not renewed within it is free again (R17). */
  leaseMs: number
}

/** What an acquire answers: a slot now (and how long the call waited for it), or a wait until `untilMs`. */
export type SlotReply =
  | { granted: true; waitedMs: number; startedAt: number; promote: string[] }
  | { granted: false; reason: 'concurrency' | 'rate'; untilMs: number; promote: string[] }

/** What `harness stats` shows of one key of one limit. */
export interface LimitKeyState {
  key: string
  running: number
  waiting: number
  /** Starts in the current rate window (0 without a rate). */
  rateUsed: number
}

/** Keys the stats list per limit, newest first: a bound on what one stats call reads. */
const STATS_KEYS = 50

/** Characters a limit's names keep in its key names; any other is %-encoded (no `{`, `}` or `:`). */
const encodePart = (part: string) => part.replace(/[^A-Za-z0-9._/-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

/**
 * The state of one limit (a tool's or the turns' of one harness), across every worker and shard
 * (R17): its keys carry a hash tag of their own, `{limit:<harness>:<scope>}`, so on a Cluster a
 * limit lives on one master whatever the shards of the sessions that use it. Each key of the limit
 * has a slots, a waiting and a starts sorted set and a handed hash (src/log/commands/acquireSlot.lua).
 */
export class LimitStore {
  private readonly base: string

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    harness: string,
    /** `tool:<name>` or `turns`. */
    readonly scope: string,
    private readonly bounds: LimitBounds,
  ) {
    this.base = `${prefix}:{limit:${encodePart(harness)}:${encodePart(scope)}}`
  }

  private keysOf(key: string) {
    const at = `${this.base}:k:${encodePart(key)}`
    return {
      slots: `${at}:slots`,
      waiting: `${at}:waiting`,
      starts: `${at}:starts`,
      keysIndex: `${this.base}:keys`,
      handed: `${at}:handed`,
    }
  }

  /** Takes a slot for `member` under `key`, or lines it up (FIFO per key). */
  async acquire(key: string, member: string, recheckMs: number): Promise<SlotReply> {
    const { concurrency, rateLimit, perMs, leaseMs } = this.bounds
    const reply = await this.run('acquireSlot', () =>
      runScript(this.redis, scripts.acquireSlot, {
        keys: this.keysOf(key),
        args: { member, leaseMs, concurrency, rateLimit, perMs, key, recheckMs },
      }),
    )
    if (reply[0] === 'granted') {
      const [, waitedMs, startedAt, ...promote] = reply
      return { granted: true, waitedMs: Number(waitedMs), startedAt: Number(startedAt), promote }
    }
    const [, reason, untilMs, ...promote] = reply
    return { granted: false, reason, untilMs: Number(untilMs), promote }
  }

  /** Gives `member`'s slot back; answers the waiters handed a slot, to be woken. */
  release(key: string, member: string): Promise<string[]> {
    const { concurrency, rateLimit, perMs, leaseMs } = this.bounds
    return this.run('releaseSlot', () =>
      runScript(this.redis, scripts.releaseSlot, { keys: this.keysOf(key), args: { member, leaseMs, concurrency, rateLimit, perMs, key } }),
    )
  }

  /** Renews `member`'s lease; false when it no longer holds the slot (it expired). */
  async renew(key: string, member: string): Promise<boolean> {
    const { slots } = this.keysOf(key)
    const renewed = await this.run('renewSlot', () =>
      runScript(this.redis, scripts.renewSlot, { keys: { slots }, args: { member, leaseMs: this.bounds.leaseMs } }),
    )
    return renewed === 1
  }

  /** True while `member` holds a slot under `key` (handed to it, or its own). */
  async holds(key: string, member: string): Promise<boolean> {
    const { slots } = this.keysOf(key)
    const lease = await this.run('limitState', () => this.redis.zscore(slots, member))
    return lease !== null && Number(lease) > Date.now()
  }

  /** Running, waiting and rate use of the limit's most recently used keys (expired leases not counted). */
  async state(): Promise<LimitKeyState[]> {
    return this.run('limitState', async () => {
      const now = Date.now()
      const keys = await this.redis.zrevrange(`${this.base}:keys`, 0, STATS_KEYS - 1)
      return Promise.all(
        keys.map(async (key) => {
          const { slots, waiting, starts } = this.keysOf(key)
          const [running, waits, used] = await Promise.all([
            this.redis.zcount(slots, `(${now}`, '+inf'),
            this.redis.zcard(waiting),
            this.bounds.rateLimit > 0 ? this.redis.zcount(starts, `(${now - this.bounds.perMs}`, '+inf') : Promise.resolve(0),
          ])
          return { key, running, waiting: waits, rateUsed: used }
        }),
      )
    })
  }

  private async run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (error) {
      throw new StorageError(operation, this.base, error)
    }
  }
}
