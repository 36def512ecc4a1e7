import type { Redis } from 'ioredis'
import { StorageError } from '../errors.js'
import { parseMember } from './formats.js'
import { indexKeys } from './keys.js'

/** One item of an open-work index. */
export interface OpenItem {
  member: string
  sessionId: string
  /** The inputId of a turn, the toolCallId of a call, the questionId of a question. */
  id: string
}

type Index = 'openTurns' | 'openCalls' | 'openQuestions'

/**
 * The host-wide indexes of open work (turns, calls, questions), which the sweeper and the question
 * list scan: their cost is O(open work), never O(all sessions). Members are written by the session
 * log's scripts; here they are listed, dropped once closed, and claimed for a repair.
 */
export class OpenWork {
  private readonly keys: ReturnType<typeof indexKeys>

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {
    this.keys = indexKeys(prefix)
  }

  /** Items opened before `before` (ms), oldest first. */
  olderThan(index: Index, before: number, limit: number): Promise<OpenItem[]> {
    return this.run(`list ${index}`, async () =>
      toItems(await this.redis.zrangebyscore(this.keys[index], '-inf', before, 'LIMIT', 0, limit)),
    )
  }

  /** A page of items by rank, oldest first. */
  page(index: Index, start: number, count: number): Promise<OpenItem[]> {
    return this.run(`list ${index}`, async () =>
      toItems(await this.redis.zrange(this.keys[index], String(start), String(start + count - 1))),
    )
  }

  /** Drops items found closed (settled, landed, answered, expired or gone). */
  async drop(index: Index, items: OpenItem[]): Promise<void> {
    if (items.length > 0) await this.run(`drop ${index}`, () => this.redis.zrem(this.keys[index], ...items.map((i) => i.member)))
  }

  /** Claims an item for one repair (two sweepers at once repair it once); returns its release, or null when taken. */
  async claim(item: OpenItem, ms: number): Promise<(() => Promise<void>) | null> {
    const lock = `${this.prefix}:sweep-lock:${item.member}`
    if ((await this.run('claim', () => this.redis.set(lock, '1', 'PX', ms, 'NX'))) !== 'OK') return null
    return async () => void (await this.redis.del(lock))
  }

  /** Counts one sweeper repair by its reason, for operators (`harness stats`). */
  async countRecovery(reason: string): Promise<void> {
    await this.run('count recovery', () => this.redis.hincrby(this.keys.recoveries, reason, 1))
  }

  private async run<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (error) {
      throw new StorageError(operation, '(open-work index)', error)
    }
  }
}

function toItems(members: string[]): OpenItem[] {
  return members.map((member) => ({ member, ...parseMember(member) }))
}
