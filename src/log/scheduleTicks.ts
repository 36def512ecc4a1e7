import type { RedisClient } from './client.js'
import { shardBase } from './keys.js'

/** What a schedule's ticks did so far: its last tick's input id and how many ticks prompted and skipped. */
export interface TickCounts {
  last?: string
  prompted: number
  skipped: number
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
    const [last, prompted, skipped] = await this.redis.hmget(this.key, id, `${id}\0prompted`, `${id}\0skipped`)
    return { ...(last ? { last } : {}), prompted: Number(prompted ?? 0), skipped: Number(skipped ?? 0) }
  }

  /** A tick prompted `inputId`; counted once per input id (a tick job run again after a crash counts nothing twice). */
  async prompted(id: string, inputId: string): Promise<void> {
    const previous = await this.redis.hget(this.key, id)
    if (previous === inputId) return
    await this.redis.multi().hset(this.key, id, inputId).hincrby(this.key, `${id}\0prompted`, 1).exec()
  }

  async skipped(id: string): Promise<void> {
    await this.redis.hincrby(this.key, `${id}\0skipped`, 1)
  }

  async forget(id: string): Promise<void> {
    await this.redis.hdel(this.key, id, `${id}\0prompted`, `${id}\0skipped`)
  }
}
