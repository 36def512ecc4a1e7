import type { RedisClient } from './client.js'
import { shardBase } from './keys.js'

/** What a schedule's ticks did so far: its last tick's input id, how many ticks prompted and skipped, and the last failure since a tick prompted. */
export interface TickCounts {
  last?: string
  prompted: number
  skipped: number
  lastError?: { message: string; at: number }
}

/** A failed tick's message is kept this long at most: it may quote a caller's value. */
const MAX_ERROR_CHARS = 1_000

function parseError(text: string | null): TickCounts['lastError'] {
  if (!text) return undefined
  try {
    const error: unknown = JSON.parse(text)
    if (typeof error !== 'object' || error === null || !('message' in error) || !('at' in error)) return undefined
    return typeof error.message === 'string' && typeof error.at === 'number' ? { message: error.message, at: error.at } : undefined
  } catch {
    return undefined
  }
}

/**
 * The ticks of each schedule (one hash in shard 0, beside the schedules' queue): the input id of the
 * last tick that prompted, for `overlap: 'skip'`, and counts for operators.
 */
export class ScheduleTicks {
  readonly key: string
  constructor(
    readonly redis: RedisClient,
    prefix: string,
    shards: number,
  ) {
    this.key = `${shardBase(prefix, 0, shards)}:schedule-ticks`
  }

  async of(id: string): Promise<TickCounts> {
    const [last, prompted, skipped, error] = await this.redis.hmget(this.key, id, `${id}\0prompted`, `${id}\0skipped`, `${id}\0error`)
    const lastError = parseError(error)
    return {
      ...(last ? { last } : {}),
      prompted: Number(prompted ?? 0),
      skipped: Number(skipped ?? 0),
      ...(lastError ? { lastError } : {}),
    }
  }

  /**
   * A tick prompted `inputId`; counted once per input id (a tick job run again after a crash counts
   * nothing twice). It clears the last tick's error: the schedule works again.
   */
  async prompted(id: string, inputId: string): Promise<void> {
    const previous = await this.redis.hget(this.key, id)
    if (previous === inputId) return
    await this.redis.multi().hset(this.key, id, inputId).hincrby(this.key, `${id}\0prompted`, 1).hdel(this.key, `${id}\0error`).exec()
  }

  /** A tick failed: its error, kept until a tick prompts (`host.schedules()` shows it as `lastError`). */
  async failed(id: string, message: string, at: number): Promise<void> {
    await this.redis.hset(this.key, `${id}\0error`, JSON.stringify({ message: message.slice(0, MAX_ERROR_CHARS), at }))
  }

  async skipped(id: string): Promise<void> {
    await this.redis.hincrby(this.key, `${id}\0skipped`, 1)
  }

  async forget(id: string): Promise<void> {
    await this.redis.hdel(this.key, id, `${id}\0prompted`, `${id}\0skipped`, `${id}\0error`)
  }
}
