import { randomUUID } from 'node:crypto'
import { duplicateClient, isCluster, type RedisClient } from './client.js'

/**
 * Followers of session streams (session.events, log.follow) share blocking readers instead of holding
 * a connection each: a follower reads its own pages from its own cursor on the client's ordinary
 * connection, and only its wait for more is shared. Each reader is one connection with one XREAD BLOCK
 * over the streams its followers wait on, re-sent when that set changes; a reply wakes every follower
 * with an entry past its position. A reader takes streams of one hash tag (one Cluster slot) and at
 * most STREAMS_PER_READER of them, so connections grow with waiting streams / 256 and the tags in use,
 * not with followers. Speaks only Redis.
 */

/** Streams one reader's XREAD covers at most: bounds the command's size and the work of each reply. */
const STREAMS_PER_READER = 256
/** How long one XREAD blocks before it is sent again (a change of the set interrupts it sooner). */
const BLOCK_MS = 30_000
/** A reader with no follower this long closes its connection. */
const IDLE_MS = 30_000
/** A reader's wake-up stream expires unless used, so a process that died leaves nothing behind for long. */
const NUDGE_TTL_MS = 600_000

/** A stream key and the last id its follower has: the follower waits for an entry after it. */
export type StreamPosition = readonly [key: string, after: string]

interface Waiter {
  streams: readonly StreamPosition[]
  done(error?: Error): void
}

/** Orders two stream ids (`<ms>-<seq>`). */
export function compareIds(a: string, b: string): number {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt)
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt)
  return am === bm ? (as === bs ? 0 : as < bs ? -1 : 1) : am < bm ? -1 : 1
}

/** The part of a key Redis Cluster hashes: the first non-empty `{…}`, else the whole key. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{')
  const close = open < 0 ? -1 : key.indexOf('}', open + 1)
  return close > open + 1 ? key.slice(open + 1, close) : key
}

/** A key in the same slot as `key` (the same hash tag), named for one reader's wake-ups. */
function nudgeKeyFor(key: string, name: string): string {
  const open = key.indexOf('{')
  const tag = hashTagOf(key)
  return `${open > 0 ? key.slice(0, open) : ''}{${tag}}:followers:${name}`
}

class Reader {
  /** Followers per stream key: what the XREAD must cover. */
  private readonly refs = new Map<string, number>()
  readonly waiters = new Set<Waiter>()
  private conn: RedisClient | undefined
  /** The positions the XREAD now blocked in Redis waits after; undefined while none is. */
  private blocked: Map<string, string> | undefined
  private running = false
  private closed = false
  private idle: NodeJS.Timeout | undefined
  private lastNudge = '0-0'

  constructor(
    private readonly main: RedisClient,
    private readonly nudgeKey: string,
    private readonly onIdle: (reader: Reader) => void,
  ) {}

  get streamCount(): number {
    return this.refs.size
  }

  /** How many streams this reader would cover more with `streams`. */
  added(streams: readonly StreamPosition[]): number {
    return new Set(streams.map(([key]) => key).filter((key) => !this.refs.has(key))).size
  }

  add(waiter: Waiter): void {
    this.waiters.add(waiter)
    for (const [key] of waiter.streams) this.refs.set(key, (this.refs.get(key) ?? 0) + 1)
    clearTimeout(this.idle)
    if (!this.running) void this.loop()
    // the blocked XREAD misses a stream, or waits after a later id than this follower: send it again
    else if (this.blocked && !waiter.streams.every(([key, after]) => this.covers(key, after))) this.nudge()
  }

  /** Whether the blocked XREAD wakes for an entry of `key` after `after`. */
  private covers(key: string, after: string): boolean {
    const blockedAfter = this.blocked?.get(key)
    return blockedAfter !== undefined && compareIds(blockedAfter, after) <= 0
  }

  remove(waiter: Waiter): void {
    if (!this.waiters.delete(waiter)) return
    for (const [key] of waiter.streams) {
      const n = (this.refs.get(key) ?? 1) - 1
      if (n > 0) this.refs.set(key, n)
      else this.refs.delete(key)
    }
  }

  close(error: Error): void {
    this.closed = true
    clearTimeout(this.idle)
    for (const waiter of [...this.waiters]) waiter.done(error)
    this.conn?.disconnect()
  }

  private open(): RedisClient {
    const conn = duplicateClient(this.main, { enableAutoPipelining: false })
    conn.on('error', () => {}) // the client's own connections report Redis trouble
    return conn
  }

  /** Ends the blocked XREAD: an entry on the reader's own stream, which it reads with the rest. */
  private nudge(): void {
    this.main
      .multi()
      .xadd(this.nudgeKey, 'MAXLEN', '1', '*', 'n', '1')
      .pexpire(this.nudgeKey, NUDGE_TTL_MS)
      .exec()
      .catch(() => {}) // the XREAD is sent again after BLOCK_MS anyway
  }

  private async loop(): Promise<void> {
    this.running = true
    try {
      while (this.waiters.size > 0 && !this.closed) {
        const after = new Map<string, string>()
        for (const waiter of this.waiters)
          for (const [key, id] of waiter.streams) {
            const known = after.get(key)
            if (known === undefined || compareIds(id, known) < 0) after.set(key, id)
          }
        // commands wait across a reconnect like the client's own (its options are copied), so a Redis
        // restart only delays the wake-ups; the positions are explicit ids, never `$`, so none is lost
        const conn = (this.conn ??= this.open())
        this.blocked = after
        let reply: Array<[string, Array<[string, string[]]>]> | null
        try {
          reply = (await conn.xread(
            'COUNT',
            1,
            'BLOCK',
            BLOCK_MS,
            'STREAMS',
            ...after.keys(),
            this.nudgeKey,
            ...after.values(),
            this.lastNudge,
          )) as typeof reply
        } catch (error) {
          this.blocked = undefined
          if (this.closed) return
          for (const waiter of [...this.waiters])
            if (waiter.streams.some(([key]) => after.has(key))) waiter.done(error instanceof Error ? error : new Error(String(error)))
          continue
        }
        this.blocked = undefined
        const newest = new Map<string, string>()
        for (const [key, entries] of reply ?? []) {
          const id = entries.at(-1)?.[0]
          if (id !== undefined) newest.set(key, id)
        }
        this.lastNudge = newest.get(this.nudgeKey) ?? this.lastNudge
        for (const waiter of [...this.waiters])
          if (waiter.streams.some(([key, id]) => newest.has(key) && compareIds(newest.get(key)!, id) > 0)) waiter.done()
      }
    } finally {
      this.running = false
      if (!this.closed && this.waiters.size === 0) {
        this.idle = setTimeout(() => this.onIdle(this), IDLE_MS)
        this.idle.unref()
      }
    }
  }
}

/** The readers of one client, by hash tag (a single Redis: one group), closed when the client ends. */
class SharedReaders {
  private readonly groups = new Map<string, Reader[]>()
  private readonly name = randomUUID()
  private made = 0

  constructor(private readonly main: RedisClient) {
    // the client was closed (host.close): so are its readers; a client connected again gets new ones
    main.once('end', () => {
      shared.delete(main)
      for (const readers of this.groups.values()) for (const r of readers) r.close(new Error('the Redis client was closed'))
      this.groups.clear()
    })
  }

  add(waiter: Waiter): Reader {
    const first = waiter.streams[0]![0]
    const group = isCluster(this.main) ? hashTagOf(first) : ''
    const readers = this.groups.get(group) ?? []
    this.groups.set(group, readers)
    let reader = readers.find((r) => r.added(waiter.streams) === 0)
    reader ??= readers.find((r) => r.streamCount + r.added(waiter.streams) <= STREAMS_PER_READER)
    if (!reader) {
      reader = new Reader(this.main, nudgeKeyFor(first, `${this.name}-${this.made++}`), (idle) => this.drop(group, idle))
      readers.push(reader)
    }
    reader.add(waiter)
    return reader
  }

  private drop(group: string, reader: Reader): void {
    if (reader.waiters.size > 0) return
    reader.close(new Error('the Redis client was closed'))
    const readers = this.groups.get(group)?.filter((r) => r !== reader) ?? []
    if (readers.length > 0) this.groups.set(group, readers)
    else this.groups.delete(group)
  }
}

const shared = new WeakMap<RedisClient, SharedReaders>()

/**
 * Resolves once one of `streams` (keys of one hash tag) has an entry after its id, or `timeoutMs` has
 * passed, or `signal` aborts; rejects with what Redis threw. Waits on the client's shared readers, so
 * a follower holds no connection of its own, and its abort closes nothing another follower uses.
 */
export function waitForEntries(
  redis: RedisClient,
  streams: readonly StreamPosition[],
  options: { timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted || streams.length === 0) return resolve()
    let readers = shared.get(redis)
    if (!readers) shared.set(redis, (readers = new SharedReaders(redis)))
    let finished = false
    const finish = (error?: Error) => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      reader.remove(waiter)
      if (error) reject(error)
      else resolve()
    }
    const onAbort = () => finish()
    const waiter: Waiter = { streams, done: finish }
    const timer = setTimeout(finish, options.timeoutMs)
    options.signal?.addEventListener('abort', onAbort, { once: true })
    // a reader wakes its waiters only later (after a reply), never inside add
    const reader = readers.add(waiter)
  })
}
