import type { Redis } from 'ioredis'
import { WaitTimeoutError } from '../errors.js'

/** How often a waiter re-checks without a message (a message lost across a reconnect only delays). */
const RECHECK_MS = 1_000

/**
 * Wakes waiters (runTool, settled) when a Lua script PUBLISHes that a result landed or a turn settled.
 * One subscriber connection per host; the waiter always re-checks the durable state, so the message
 * is a hint, never the truth.
 */
export class Notifier {
  private subscriber: Redis | null = null
  private subscribed: Promise<void> | null = null
  private readonly waiters = new Map<string, Set<() => void>>()

  constructor(
    private readonly redis: Redis,
    private readonly channel: string,
  ) {}

  async wait<T>(key: string, check: () => Promise<T | undefined>, what: string, timeoutMs?: number): Promise<T> {
    await this.subscribe()
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
    let wake: () => void = () => {}
    let signalled = false
    const onMessage = () => {
      signalled = true
      wake()
    }
    let set = this.waiters.get(key)
    if (!set) this.waiters.set(key, (set = new Set()))
    set.add(onMessage)
    try {
      for (;;) {
        signalled = false
        const value = await check()
        if (value !== undefined) return value
        const left = deadline - Date.now()
        if (left <= 0) throw new WaitTimeoutError(what, timeoutMs!)
        if (signalled) continue
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(RECHECK_MS, left))
          wake = () => (clearTimeout(timer), resolve())
        })
      }
    } finally {
      set.delete(onMessage)
      if (set.size === 0) this.waiters.delete(key)
    }
  }

  private subscribe(): Promise<void> {
    this.subscribed ??= (async () => {
      this.subscriber = this.redis.duplicate()
      this.subscriber.on('error', () => {}) // the main client reports connection trouble
      this.subscriber.on('message', (_channel: string, message: string) => {
        for (const wake of this.waiters.get(message) ?? []) wake()
      })
      await this.subscriber.subscribe(this.channel)
    })()
    return this.subscribed
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect()
    this.subscriber = null
    this.subscribed = null
  }
}
