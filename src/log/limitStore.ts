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

/**
 * A limit's names in its key names, one to one: characters in `[A-Za-z0-9._/-]` are kept, any other
 * UTF-16 code unit is `%xx` (below U+0100) or `%uxxxx` (no `{`, `}` or `:` is left). The fixed widths
 * keep two names apart that a variable width would merge (`Ā` and `\x10` + `0` were both `%100`).
 */
const encodeLimitPart = (part: string) =>
  part.replace(/[^A-Za-z0-9._/-]/g, (c) => {
    const code = c.charCodeAt(0)
    return code < 0x100 ? `%${code.toString(16).padStart(2, '0')}` : `%u${code.toString(16).padStart(4, '0')}`
  })

/**
 * The state of one limit (a tool's or the turns' of one harness), across every worker and shard
 * (R17): its keys carry a hash tag of their own, `{limit:<harness>:<scope>}`, so on a Cluster a
 * limit lives on one master whatever the shards of the sessions that use it. Each key of the limit
 * has a slots, a waiting and a starts sorted set and a handed hash (src/log/commands/acquireSlot.lua);
 * each expires once idle. A slot is held by one attempt (`holder`: `<member>#<attempt token>`).
 */
export class LimitStore {
  private readonly base: string
  /** How long a key's state outlives its last use: a lease, or a rate window, whichever is longer. */
  private readonly idleMs: number

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    harness: string,
    /** `tool:<name>` or `turns`. */
    readonly scope: string,
    private readonly bounds: LimitBounds,
  ) {
    this.base = `${prefix}:{limit:${encodeLimitPart(harness)}:${encodeLimitPart(scope)}}`
    this.idleMs = Math.max(bounds.leaseMs, bounds.perMs, 1)
  }

  private keysOf(key: string) {
    const at = `${this.base}:k:${encodeLimitPart(key)}`
    return {
      slots: `${at}:slots`,
      waiting: `${at}:waiting`,
      starts: `${at}:starts`,
      keysIndex: `${this.base}:keys`,
      handed: `${at}:handed`,
    }
  }

  /** Takes a slot for `member`'s attempt `holder` under `key`, or lines the member up (FIFO per key). */
  async acquire(key: string, member: string, holder: string, recheckMs: number): Promise<SlotReply> {
    const { concurrency, rateLimit, perMs, leaseMs } = this.bounds
    const reply = await this.run('acquireSlot', () =>
      runScript(this.redis, scripts.acquireSlot, {
        keys: this.keysOf(key),
        args: { member, holder, leaseMs, concurrency, rateLimit, perMs, key, idleMs: this.idleMs, recheckMs },
      }),
    )
    if (reply[0] === 'granted') {
      const [, waitedMs, startedAt, ...promote] = reply
      return { granted: true, waitedMs: Number(waitedMs), startedAt: Number(startedAt), promote }
    }
    const [, reason, untilMs, ...promote] = reply
    return { granted: false, reason, untilMs: Number(untilMs), promote }
  }

  /** Gives `holder`'s slot back; answers the waiters handed a slot, to be woken. */
  release(key: string, holder: string): Promise<string[]> {
    const { concurrency, rateLimit, perMs, leaseMs } = this.bounds
    return this.run('releaseSlot', () =>
      runScript(this.redis, scripts.releaseSlot, {
        keys: this.keysOf(key),
        args: { holder, leaseMs, concurrency, rateLimit, perMs, key, idleMs: this.idleMs },
      }),
    )
  }

  /** Renews `holder`'s lease; false when its lease had run out (it may be another call's slot now). */
  async renew(key: string, holder: string): Promise<boolean> {
    const { slots, keysIndex } = this.keysOf(key)
    const renewed = await this.run('renewSlot', () =>
      runScript(this.redis, scripts.renewSlot, {
        keys: { slots, keysIndex },
        args: { holder, leaseMs: this.bounds.leaseMs, key, idleMs: this.idleMs },
      }),
    )
    return renewed === 1
  }

  /** True while a slot handed to `member` under `key` waits for it to take it up. */
  async holds(key: string, member: string): Promise<boolean> {
    const { slots } = this.keysOf(key)
    const lease = await this.run('limitState', () => this.redis.zscore(slots, member))
    return lease !== null && Number(lease) > Date.now()
  }

  /** Running, waiting and rate use of the limit's most recently used live keys (expired leases and keys not counted). */
  async state(): Promise<LimitKeyState[]> {
    return this.run('limitState', async () => {
      const now = Date.now()
      // the index's score is when a key's state expires: a key past it is gone (or going)
      const keys = await this.redis.zrevrangebyscore(`${this.base}:keys`, '+inf', `(${now}`, 'LIMIT', 0, STATS_KEYS)
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
