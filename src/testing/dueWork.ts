// What the test host's manual clock steps through: the times at which the product's own waits come due
// (BullMQ delayed jobs of every queue, the event timers of runTool event waits), which of them are real
// waits and which only re-checks, how the workers are woken to take what is due, and when nothing runs.
import type { HarnessHost } from '../harness/host.js'
import { hasType, indexKeys, parseToolJobId, type RedisClient } from '../log/index.js'
import { bullPrefix } from '../queue/index.js'

/** The keys of one BullMQ queue that tell what waits, runs and is due. */
interface QueueKeys {
  delayed: string
  marker: string
  wait: string
  active: string
  prioritized: string
}

/** BullMQ keeps a delayed job at score `timestamp * 4096 + n` (getDelayedScore.lua). */
const dueScore = (at: number) => (at + 1) * 4096 - 1
const timeOf = (score: string | number) => Math.floor(Number(score) / 4096)

/** Kinds of a tool call's park that end at a time the tool chose; the others are re-checks of a condition. */
const TIMED_PARKS = new Set(['sleep', 'retry', 'event', 'ask'])

export class DueWork {
  private readonly queues: QueueKeys[]
  private readonly shards: number

  constructor(
    private readonly redis: RedisClient,
    private readonly host: HarnessHost,
    /** The host's retention period, when it has one: an idle session is due that long after its last activity. */
    private readonly retentionMs?: number,
  ) {
    const refs = host.queues()
    this.shards = Math.max(1, ...refs.map((r) => r.shard + 1))
    const keysOf = (k: Record<string, string>): QueueKeys => ({
      delayed: k.delayed!,
      marker: k.marker!,
      wait: k.wait!,
      active: k.active!,
      prioritized: k.prioritized!,
    })
    const schedules = `${bullPrefix(host.prefix, 0, this.shards)}:schedules`
    this.queues = [
      ...refs.map((r) => keysOf(r.queue.keys)),
      keysOf(Object.fromEntries(['delayed', 'marker', 'wait', 'active', 'prioritized'].map((k) => [k, `${schedules}:${k}`]))),
    ]
  }

  /**
   * The earliest time at or before `limit` at which a wait the product stored comes due: a delayed job
   * that is a sleep, a retry's backoff, an event or approval timeout, a question's expiry, a model
   * retry, a schedule's tick, or a runTool event wait's timer. A park that only re-checks a condition
   * (a fan-out's children, an agent, a limit, a turn in line) is not a stop: it runs when the clock
   * passes it. Undefined for none.
   */
  async next(limit: number): Promise<number | undefined> {
    let next: number | undefined
    const consider = (at: number) => (next = next === undefined ? at : Math.min(next, at))
    for (const q of this.queues) {
      const flat = await this.redis.zrangebyscore(q.delayed, '-inf', dueScore(limit), 'WITHSCORES', 'LIMIT', 0, 200)
      for (let i = 0; i < flat.length; i += 2) {
        const at = timeOf(flat[i + 1]!)
        if (next !== undefined && at >= next) break
        if (await this.isTimed(flat[i]!, at)) consider(at)
      }
    }
    for (let shard = 0; shard < this.shards; shard++) {
      const keys = indexKeys(this.host.prefix, shard, this.shards)
      const first = async (key: string) => Number((await this.redis.zrange(key, '0', '0', 'WITHSCORES'))[1] ?? Infinity)
      const timers = [await first(keys.eventTimers)]
      // retention: the oldest session's (a score a pass found early is set to its true last activity), and the first trim
      if (this.retentionMs !== undefined) timers.push((await first(keys.sessions)) + this.retentionMs, await first(keys.trims))
      for (const at of timers) if (at <= limit) consider(at)
    }
    return next
  }

  /** True for a delayed job whose time is a wait's own (see `next`). */
  private async isTimed(jobId: string, at: number): Promise<boolean> {
    const call = parseToolJobId(jobId)
    if (call) {
      const session = await this.host.find(call.sessionId)
      if (!session) return true
      let kind: string | undefined
      for (const { record } of await session.log.read({ types: ['harness.tool.suspended'] }))
        if (hasType(record, 'harness.tool.suspended') && record.toolCallId === call.toolCallId) kind = record.kind
      return kind === undefined || TIMED_PARKS.has(kind)
    }
    if (jobId.startsWith('turn|')) {
      const [, sessionId] = jobId.split('|')
      const session = sessionId ? await this.host.find(sessionId) : null
      const retries = session ? await session.log.read({ types: ['harness.turn.retry'] }) : []
      // a model retry's wait ends at its nextAt; a turn waiting in line or paused only re-checks
      return retries.some(({ record }) => hasType(record, 'harness.turn.retry') && record.nextAt === at)
    }
    return true // a schedule's tick, a BullMQ backoff
  }

  /** Wakes every queue with a job due by `now` (its marker: the workers fetch, and BullMQ promotes it). */
  async wake(now: number): Promise<void> {
    for (const q of this.queues)
      if ((await this.redis.zcount(q.delayed, '-inf', dueScore(now))) > 0) await this.redis.zadd(q.marker, 0, '1')
  }

  /** True when no job waits, runs or is due, and no event timer is due. */
  async idle(now: number): Promise<boolean> {
    for (const q of this.queues) {
      const [wait, active, prioritized, due] = await Promise.all([
        this.redis.llen(q.wait),
        this.redis.llen(q.active),
        this.redis.zcard(q.prioritized),
        this.redis.zcount(q.delayed, '-inf', dueScore(now)),
      ])
      if (wait + active + prioritized + due > 0) return false
    }
    for (let shard = 0; shard < this.shards; shard++)
      if ((await this.redis.zcount(indexKeys(this.host.prefix, shard, this.shards).eventTimers, '-inf', now)) > 0) return false
    return true
  }
}
