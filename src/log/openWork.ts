import type { RedisClient } from './client.js'
import { StorageError } from '../errors/index.js'
import { runScript, scripts } from './commands/index.js'
import { parseMember } from './formats.js'
import { indexKeys, type IndexKeys } from './keys.js'
import { shardOf } from './shards.js'
import { heldJobs, type HeldJob, type LivenessLook } from './workerLiveness.js'

/** One item of an open-work index. */
export interface OpenItem {
  member: string
  sessionId: string
  /** The inputId of a turn, the toolCallId of a call, the questionId of a question. */
  id: string
}

/** The open-work indexes, and the event timers (their score is a wake-up time: olderThan(now) lists the due ones). */
type Index = 'openTurns' | 'openCalls' | 'openQuestions' | 'eventTimers'

/**
 * The indexes of open work (turns, calls, questions), one set per shard, which the sweeper and the
 * question list scan: their cost is O(open work), never O(all sessions). Members are written by the
 * session log's scripts; here they are listed, dropped once closed, and claimed for a repair.
 */
export class OpenWork {
  private readonly keys: IndexKeys[]
  /** Where nextRound goes on from, by index and shard. */
  private readonly cursors = new Map<string, { score: number; member: string }>()

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly shards: number,
  ) {
    this.keys = Array.from({ length: shards }, (_, shard) => indexKeys(prefix, shard, shards))
  }

  /** Items opened before `before` (ms), oldest first per shard, at most `limit` per shard; `shards`: only these. */
  async olderThan(index: Index, before: number, limit: number, shards?: readonly number[]): Promise<OpenItem[]> {
    const out: OpenItem[] = []
    for (const shard of shards ?? this.keys.keys()) {
      const key = this.keys[shard]![index]
      out.push(...toItems(await this.run(`list ${index}`, () => this.redis.zrangebyscore(key, '-inf', before, 'LIMIT', 0, limit))))
    }
    return out
  }

  /**
   * The next `limit` items per shard opened before `before`, going round the index: each call starts
   * after the last item the previous call of this OpenWork listed (by score, then member), and starts
   * again from the oldest once a shard's list ran out. A sweeper pass looks at `limit` items however
   * many wait, and over passes at every one: a call whose job vanished behind a million parked calls is
   * reached (docs/decisions/million-waiting-calls.md).
   */
  async nextRound(index: Index, before: number, limit: number, shards?: readonly number[]): Promise<OpenItem[]> {
    const out: OpenItem[] = []
    if (limit < 1) return out
    for (const shard of shards ?? this.keys.keys()) {
      const key = this.keys[shard]![index]
      const at = `${index}\0${shard}`
      const cursor = this.cursors.get(at)
      const page: Array<[string, number]> = []
      let ranOut = false
      // from the cursor's score on; the members of that score up to the cursor's were listed already
      for (let offset = 0; page.length === 0; offset += limit) {
        const flat = await this.run(`list ${index}`, () =>
          this.redis.zrangebyscore(key, cursor ? cursor.score : '-inf', before, 'WITHSCORES', 'LIMIT', offset, limit),
        )
        for (let i = 0; i < flat.length; i += 2) {
          const member = flat[i]!
          const score = Number(flat[i + 1])
          if (!cursor || score > cursor.score || member > cursor.member) page.push([member, score])
        }
        if (flat.length < limit * 2) {
          ranOut = true
          break
        }
      }
      const last = page.at(-1)
      // a short read reached the end of the shard's list: the next round starts from the oldest again
      if (!last || ranOut) this.cursors.delete(at)
      else this.cursors.set(at, { member: last[0], score: last[1] })
      out.push(...toItems(page.map(([member]) => member)))
    }
    return out
  }

  /**
   * One look at a shard (lookAtShard.lua): its event timers due by `now`, at most `limit`, and with
   * `liveness`, the jobs other worker processes hold in its active lists (src/liveness/); `looked`:
   * whether they were looked at (not when another process claimed this moment's look).
   */
  async look(
    shard: number,
    now: number,
    limit: number,
    liveness?: LivenessLook,
  ): Promise<{ due: OpenItem[]; held: HeldJob[]; looked: boolean }> {
    const { eventTimers, lookClaim } = this.keys[shard]!
    const keys = { eventTimers, lookClaim, active: liveness?.active ?? [] }
    const { claimMs = -1, livePrefix = '', own = '', maxJobs = 0, queuePrefixes = [] } = liveness ?? {}
    const args = { now, limit, claimMs, livePrefix, own, maxJobs, queuePrefixes }
    const [due, held, looked] = await this.run('look at shard', () => runScript(this.redis, scripts.lookAtShard, { keys, args }))
    return { due: toItems(due), held: heldJobs(held), looked: looked === 1 }
  }

  /** A page of items by rank over all shards, oldest first. */
  async page(index: Index, start: number, count: number): Promise<OpenItem[]> {
    const scored: Array<[string, number]> = []
    for (const keys of this.keys) {
      const flat = await this.run(`list ${index}`, () => this.redis.zrange(keys[index], '0', String(start + count - 1), 'WITHSCORES'))
      for (let i = 0; i < flat.length; i += 2) scored.push([flat[i]!, Number(flat[i + 1])])
    }
    if (this.keys.length > 1) scored.sort((a, b) => a[1] - b[1])
    return toItems(scored.slice(start, start + count).map(([member]) => member))
  }

  /** Drops items found closed (settled, landed, answered, expired or gone). */
  async drop(index: Index, items: OpenItem[]): Promise<void> {
    const byShard = new Map<number, string[]>()
    for (const item of items) {
      const shard = shardOf(item.sessionId, this.shards)
      byShard.set(shard, [...(byShard.get(shard) ?? []), item.member])
    }
    for (const [shard, members] of byShard) await this.run(`drop ${index}`, () => this.redis.zrem(this.keys[shard]![index], ...members))
  }

  /** Claims an item for one repair (two sweepers at once repair it once); returns its release, or null when taken. */
  async claim(item: OpenItem, ms: number): Promise<(() => Promise<void>) | null> {
    const lock = `${this.prefix}:sweep-lock:${item.member}`
    if ((await this.run('claim', () => this.redis.set(lock, '1', 'PX', ms, 'NX'))) !== 'OK') return null
    return async () => void (await this.redis.del(lock))
  }

  /** Counts one sweeper repair by its reason in the session's shard, for operators (`harness stats`). */
  async countRecovery(sessionId: string, reason: string): Promise<void> {
    const key = this.keys[shardOf(sessionId, this.shards)]!.recoveries
    await this.run('count recovery', () => this.redis.hincrby(key, reason, 1))
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
