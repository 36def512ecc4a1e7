import { WaitTimeoutError } from '../errors/index.js'
import { duplicateClient, isCluster, parseMessage, type Message, type RedisClient } from '../log/index.js'

/** Runs `fn`; what it throws is dropped (the caller re-checks durable state instead). */
function guard<T>(fn: () => T): T | undefined {
  try {
    return fn()
  } catch {
    return undefined
  }
}

/** How often a waiter re-checks without a message (a message lost across a reconnect only delays). */
const RECHECK_MS = 1_000

/**
 * Wakes waiters (runTool, settled) when a Lua script PUBLISHes that a result landed or a turn settled.
 * One subscriber per host, on every shard's channel: SUBSCRIBE on one Redis, SSUBSCRIBE on a Cluster
 * (ioredis keeps one sharded subscriber connection per master, and follows a failover). The waiter
 * always re-checks the durable state, so the message is a hint, never the truth.
 */
/** Ends a wait() early (its promise rejects); lighter than an AbortController for a wait of every call. */
export class WaitCancel {
  cancelled = false
  private wake: () => void = () => {}

  onCancel(wake: () => void): void {
    this.wake = wake
  }

  cancel(): void {
    this.cancelled = true
    this.wake()
  }
}

export class Notifier {
  private subscriber: RedisClient | null = null
  private subscribed: Promise<void> | null = null
  /** True once `subscribed` resolved (until a close): a wait then has nothing to wait for first. */
  private live = false
  private closed = false
  private readonly waiters = new Map<string, Set<(payload: string) => void>>()
  /** Keys awaited by a `fresh` wait (a thing this process made: no other process knows its key), and how many. */
  private readonly ownKeys = new Map<string, number>()
  private readonly listeners = new Set<(message: Message) => void>()

  constructor(
    private readonly redis: RedisClient,
    private readonly channels: readonly string[],
  ) {}

  /**
   * Hears every message (e.g. workers abort the calls of an aborted turn); returns the unsubscribe.
   * Never fails: while Redis refuses the subscription (down, or refusing the credentials) it is tried
   * again every second until it holds or the notifier is closed.
   */
  listen(listener: (message: Message) => void): () => void {
    this.listeners.add(listener)
    const keepTrying = () => {
      if (this.closed || !this.listeners.has(listener)) return
      this.subscribe().catch(() => setTimeout(keepTrying, RECHECK_MS).unref())
    }
    keepTrying()
    return () => this.listeners.delete(listener)
  }

  /** Subscribes once; after it resolves, a wait() registers its key the moment it is called. Undefined once subscribed. */
  ready(): Promise<void> | undefined {
    return this.live ? undefined : this.subscribe()
  }

  /**
   * Resolves with the first value `check` finds, or that `fromPayload` reads from a message's payload
   * (the text after the key: the landed record, one round trip less). `fresh`: the awaited thing
   * cannot exist yet, so the first check is skipped. The key is registered before the first await.
   */
  async wait<T>(
    key: string,
    check: () => Promise<T | undefined>,
    what: string,
    options: {
      timeoutMs?: number
      fresh?: boolean
      fromPayload?: (payload: string) => T | Promise<T> | undefined
      signal?: AbortSignal
      cancel?: WaitCancel
    } = {},
  ): Promise<T> {
    const { timeoutMs } = options
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
    let wake: () => void = () => {}
    // set by a message (any time), cleared before each check
    let signalled: boolean
    // a payload that needs opening (a sealed record: docs/encryption.md) is found as its promise
    let found: T | Promise<T> | undefined
    const onMessage = (payload: string) => {
      signalled = true
      if (payload && options.fromPayload) found ??= guard(() => options.fromPayload!(payload))
      wake()
    }
    let set = this.waiters.get(key)
    if (!set) this.waiters.set(key, (set = new Set()))
    set.add(onMessage)
    if (options.fresh) this.ownKeys.set(key, (this.ownKeys.get(key) ?? 0) + 1)
    const onAbort = () => wake()
    options.signal?.addEventListener('abort', onAbort, { once: true })
    options.cancel?.onCancel(onAbort)
    try {
      if (!this.live) await this.subscribe()
      for (let first = true; ; first = false) {
        options.signal?.throwIfAborted()
        if (options.cancel?.cancelled) throw new Error(`${what}: no longer awaited`)
        if (found !== undefined) return found
        signalled = false
        if (!(first && options.fresh)) {
          const value = await check()
          if (value !== undefined) return value
        }
        if (found !== undefined) return found
        const left = deadline - Date.now()
        if (left <= 0) throw new WaitTimeoutError(what, timeoutMs!)
        if (signalled) continue
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(RECHECK_MS, left))
          wake = () => (clearTimeout(timer), resolve())
        })
      }
    } finally {
      options.signal?.removeEventListener('abort', onAbort)
      set.delete(onMessage)
      if (set.size === 0) this.waiters.delete(key)
      if (options.fresh) {
        const own = this.ownKeys.get(key)! - 1
        if (own > 0) this.ownKeys.set(key, own)
        else this.ownKeys.delete(key)
      }
    }
  }

  /**
   * True while every waiter of `key` is a `fresh` wait of this process: the thing it awaits was made
   * here under a key no other process knows (a runTool call under a generated id), so `deliver` from
   * this process's own landing is all the waking it needs (SessionLogOptions.awaitedOnlyHere).
   */
  awaitedOnlyHere(key: string): boolean {
    const own = this.ownKeys.get(key)
    return own !== undefined && own === this.waiters.get(key)?.size
  }

  /**
   * Wakes the waiters of `key` with a message's `payload`, each isolated: the subscriber's messages,
   * and a result this process landed (SessionLogOptions.landed), one subscriber trip earlier (the
   * listeners hear only the PUBLISH).
   */
  deliver(key: string, payload: string): void {
    const set = this.waiters.get(key)
    if (set) for (const wake of set) guard(() => wake(payload))
  }

  private subscribe(): Promise<void> {
    this.closed = false
    this.subscribed ??= (async () => {
      const sharded = isCluster(this.redis)
      const subscriber = duplicateClient(this.redis, {}, sharded ? { shardedSubscribers: true } : {})
      this.subscriber = subscriber
      subscriber.on('error', () => {}) // the main client reports connection trouble
      subscriber.on(sharded ? 'smessage' : 'message', (_channel: string, message: string) => {
        const parsed = parseMessage(message)
        // a payload that trips a waiter or listener must not throw out of the subscriber: each is
        // isolated, and a waiter re-checks the durable state anyway
        this.deliver(parsed.key, parsed.payload)
        for (const listener of this.listeners) guard(() => listener(parsed))
      })
      // each shard's channel lies in its own slot: one SSUBSCRIBE per channel
      if (sharded) for (const channel of this.channels) await subscriber.ssubscribe(channel)
      else await subscriber.subscribe(...this.channels)
      this.live = !this.closed
    })().catch((error: unknown) => {
      // forget the failed attempt so the next subscribe() tries again on a new connection
      this.live = false
      this.subscriber?.disconnect()
      this.subscriber = null
      this.subscribed = null
      throw error
    })
    return this.subscribed
  }

  async close(): Promise<void> {
    this.closed = true
    this.live = false
    this.subscriber?.disconnect()
    this.subscriber = null
    this.subscribed = null
  }
}
