import { randomBytes } from 'node:crypto'
import { LimitKeyError, MAX_LIMIT_KEY_LENGTH, type LockLostError } from '../errors/index.js'
import type { ResolvedLimit } from '../core/index.js'
import { LimitStore, type RedisClient } from '../log/index.js'
import { observeLimitWait } from '../telemetry/index.js'
import { SlotLease } from './lease.js'

/** Where a limit's state lives and how long a slot's lease is: the host's connection and prefix, the job lock. */
export interface LimitPlace {
  redis: RedisClient
  prefix: string
  harness: string
  /** The job lock (durability.lockMs): a slot's lease, renewed every half of it while its holder runs. */
  lockMs: number
}

/** What waits on a limit: a tool call or a turn, its member id (`<sessionId>|<id>`), and what its key function reads. */
export interface LimitSubject {
  of: 'tool call' | 'turn'
  member: string
  sessionId: string
  input: unknown
  context?: unknown
}

/**
 * A slot this attempt holds: give it back when the attempt's code has ended (it landed, parked or
 * failed; an attempt given up on while its code runs keeps it until that code settles). `confirm`
 * before each step or model call: it throws LockLostError once the slot's lease ran out.
 */
export interface HeldSlot {
  readonly kind: 'held'
  readonly key: string
  /** How long it waited in the limit's line, and when it started by the limit's clock (Redis TIME, ms). */
  readonly waitedMs: number
  readonly startedAt: number
  confirm(): Promise<void> | undefined
  readonly lost: LockLostError | null
  release(): Promise<void>
}

/** An attempt's hold on its call (its job lock, if any) and on its limit slot: both confirmed, either lost. */
export function holdingSlot<H extends { confirm(): Promise<void> | undefined; readonly lost: LockLostError | null }>(
  lock: H | undefined,
  slot: HeldSlot,
): { confirm(): Promise<void> | undefined; readonly lost: LockLostError | null } {
  return {
    confirm() {
      const locked = lock?.confirm()
      const leased = slot.confirm()
      if (!locked || !leased) return locked ?? leased
      return Promise.all([locked, leased]).then(() => undefined)
    },
    get lost() {
      return lock?.lost ?? slot.lost
    },
  }
}

/** This process's part of a slot holder's name: a holder is `<member>#<process>.<n>`, one per attempt. */
const PROCESS_TOKEN = randomBytes(6).toString('hex')
let holders = 0

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
  // the attempt's own slot: another attempt of the same call (a zombie's) holds another one
  const holder = `${subject.member}#${PROCESS_TOKEN}.${++holders}`
  const sentAt = Date.now()
  const reply = await store.acquire(key, subject.member, holder, place.lockMs)
  const promote = () => Promise.all(reply.promote.map((member) => wake(member).catch(() => {})))
  if (!reply.granted) {
    await promote()
    return { kind: 'wait', reason: reply.reason, until: reply.untilMs, handed: () => store.holds(key, subject.member) }
  }
  if (reply.waitedMs > 0) observeLimitWait(place.harness, limit.scope, reply.waitedMs)
  void promote()
  const at = subject.member.indexOf('|')
  const owner = { sessionId: subject.sessionId, id: subject.member.slice(at + 1), of: subject.of }
  const lease = new SlotLease(store, key, holder, owner, place.lockMs, sentAt, wake)
  return Object.assign(lease, { waitedMs: reply.waitedMs, startedAt: reply.startedAt })
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
