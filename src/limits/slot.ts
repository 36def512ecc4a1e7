import { LimitKeyError, MAX_LIMIT_KEY_LENGTH } from '../errors/index.js'
import type { ResolvedLimit } from '../core/index.js'
import { LimitStore, type RedisClient } from '../log/index.js'
import { observeLimitWait } from '../telemetry/index.js'

/** Where a limit's state lives and how long a slot's lease is: the host's connection and prefix, the job lock. */
export interface LimitPlace {
  redis: RedisClient
  prefix: string
  harness: string
  /** The job lock (durability.lockMs): a slot's lease, renewed every half of it while its holder runs. */
  lockMs: number
}

/** What waits on a limit: its member id (`<sessionId>|<id>`), and what its key function reads. */
export interface LimitSubject {
  member: string
  sessionId: string
  input: unknown
  context?: unknown
}

/** A slot this attempt holds: give it back when the attempt ends (lands, parks, fails). */
export interface HeldSlot {
  readonly kind: 'held'
  readonly key: string
  /** How long it waited in the limit's line, and when it started by the limit's clock (Redis TIME, ms). */
  readonly waitedMs: number
  readonly startedAt: number
  release(): Promise<void>
}

/** No slot now: wait (holding no worker slot) until `until`, or until a release hands one over. */
export interface WaitingSlot {
  readonly kind: 'wait'
  readonly reason: 'concurrency' | 'rate'
  readonly until: number
  /** True once a slot was handed to it (a wake-up that came before the caller parked). */
  handed(): Promise<boolean>
}

const stores = new WeakMap<RedisClient, Map<string, LimitStore>>()

function storeOf(place: LimitPlace, limit: ResolvedLimit): LimitStore {
  let byScope = stores.get(place.redis)
  if (!byScope) stores.set(place.redis, (byScope = new Map()))
  const id = `${place.prefix}\0${place.harness}\0${limit.scope}\0${place.lockMs}`
  let store = byScope.get(id)
  if (!store) {
    const bounds = { concurrency: limit.concurrency, rateLimit: limit.rateLimit, perMs: limit.perMs, leaseMs: place.lockMs }
    byScope.set(id, (store = new LimitStore(place.redis, place.prefix, place.harness, limit.scope, bounds)))
  }
  return store
}

/** The subject's key under the limit: '' for a limit without a key function. Throws LimitKeyError. */
function limitKey(limit: ResolvedLimit, subject: LimitSubject): string {
  if (!limit.key) return ''
  let key: unknown
  try {
    key = limit.key(subject.input, { sessionId: subject.sessionId, context: subject.context })
  } catch (error) {
    const { name, message } = error instanceof Error ? error : { name: 'error', message: String(error) }
    throw new LimitKeyError(limit.scope, `threw (${name}: ${message.slice(0, 200)})`)
  }
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_LIMIT_KEY_LENGTH)
    throw new LimitKeyError(limit.scope, `returned ${typeof key === 'string' ? `a string of ${key.length} characters` : typeof key}`)
  return key
}

/**
 * Takes a slot of `limit` for the subject (R17), across every worker and shard: a held slot, whose
 * lease this process renews until it is released, or a wait. `wake` promotes the parked jobs of
 * members a slot was handed to.
 */
export async function takeSlot(
  place: LimitPlace,
  limit: ResolvedLimit,
  subject: LimitSubject,
  wake: (member: string) => Promise<void>,
): Promise<HeldSlot | WaitingSlot> {
  const key = limitKey(limit, subject)
  const store = storeOf(place, limit)
  const reply = await store.acquire(key, subject.member, place.lockMs)
  const promote = () => Promise.all(reply.promote.map((member) => wake(member).catch(() => {})))
  if (!reply.granted) {
    await promote()
    return { kind: 'wait', reason: reply.reason, until: reply.untilMs, handed: () => store.holds(key, subject.member) }
  }
  if (reply.waitedMs > 0) observeLimitWait(place.harness, limit.scope, reply.waitedMs)
  void promote()
  // renewed like BullMQ renews the job lock: a holder that dies stops renewing, and its slot comes back
  const renewal = setInterval(() => void store.renew(key, subject.member).catch(() => {}), Math.max(1, Math.floor(place.lockMs / 2)))
  renewal.unref()
  let released = false
  return {
    kind: 'held',
    key,
    waitedMs: reply.waitedMs,
    startedAt: reply.startedAt,
    async release() {
      if (released) return
      released = true
      clearInterval(renewal)
      const handed = await store.release(key, subject.member)
      await Promise.all(handed.map((member) => wake(member).catch(() => {})))
    },
  }
}

/** Running, waiting and rate use per key of each limit of a harness (`host.stats()`). */
export async function limitStates(place: Omit<LimitPlace, 'lockMs'>, limits: Iterable<ResolvedLimit>) {
  return Promise.all(
    [...limits].map(async (limit) => ({
      harness: place.harness,
      limit: limit.scope,
      keys: await storeOf({ ...place, lockMs: 0 }, limit).state(),
    })),
  )
}
