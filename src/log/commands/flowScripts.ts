import { arg, defineScript, num, reply, text } from './script.js'

/**
 * The scripts that live in a slot of their own, not in a session's shard: a limit's slots and lines
 * (R17) and an (event, key)'s waits (R20); and the one on a tool queue's own BullMQ keys.
 */

/** A tool queue's stale base marker, dropped while no job waits (src/lane/bullmqInternals.ts). */
export const dropStaleMarker = defineScript({
  name: 'dropStaleMarker',
  keys: ['marker', 'wait', 'prioritized'],
  args: {},
  reply: reply<0 | 1>(),
})

/**
 * A worker process's look at a shard (its due event timers, and the jobs other processes hold in its
 * active lists); and the move of a gone process's job back to wait as BullMQ's stalled check moves it
 * (src/liveness/deadWorkers.ts, the keys from src/lane/bullmqInternals.ts).
 */
export const lookAtShard = defineScript({
  name: 'lookAtShard',
  keys: ['eventTimers', 'lookClaim'],
  args: { now: num, limit: num, claimMs: num, livePrefix: text, own: text, maxJobs: num },
  trailingKeys: 'active',
  trailingArgs: 'queuePrefixes',
  reply: reply<[due: string[], held: Array<string | number>, looked: 0 | 1]>(),
})

export const reclaimJob = defineScript({
  name: 'reclaimJob',
  keys: ['job', 'lock', 'active', 'wait', 'stalled', 'meta', 'marker', 'events'],
  args: { jobId: text, token: text, expiresAt: num, maxStalledCount: num },
  reply: reply<0 | 1>(),
})

/** The state of one key of one limit (R17), in the limit's own slot. */
const limitKeys = ['slots', 'waiting', 'starts', 'keysIndex', 'handed'] as const
const bounds = { leaseMs: num, concurrency: num, rateLimit: num, perMs: num, key: text, idleMs: num }

export const acquireSlot = defineScript({
  name: 'acquireSlot',
  keys: limitKeys,
  args: { member: text, holder: text, ...bounds, recheckMs: num },
  reply: reply<
    | ['granted', waitedMs: number, startedAt: number, ...promote: string[]]
    | ['wait', 'concurrency' | 'rate', untilMs: number, ...promote: string[]]
  >(),
})

export const releaseSlot = defineScript({
  name: 'releaseSlot',
  keys: limitKeys,
  args: { holder: text, ...bounds },
  reply: reply<string[]>(),
})

export const renewSlot = defineScript({
  name: 'renewSlot',
  keys: ['slots', 'keysIndex'],
  args: { holder: text, leaseMs: num, key: text, idleMs: num },
  reply: reply<0 | 1>(),
})

export const awaitEvent = defineScript({
  name: 'awaitEvent',
  keys: ['eventHash'],
  args: { member: text, waiter: text, now: num, graceMs: num, expired: arg<'1' | '0'>() },
  /** pairs of kept event uid and verdict */
  trailingArgs: 'verdicts',
  reply: reply<['event', string, string] | ['timeout'] | ['waiting'] | ['check', ...uidsAndPayloads: string[]]>(),
})

export const leaveEventWait = defineScript({
  name: 'leaveEventWait',
  keys: ['eventHash'],
  args: { member: text, now: num, graceMs: num },
  reply: reply<['event', string, string] | ['left']>(),
})

export const deliverEvent = defineScript({
  name: 'deliverEvent',
  keys: ['eventHash'],
  args: { uid: text, id: text, payload: text, now: num, retentionMs: num, graceMs: num },
  trailingArgs: 'checkedMembers',
  reply: reply<
    | ['delivered', ...membersAndHarnesses: string[]]
    | ['stored']
    | ['duplicate', ...membersAndHarnesses: string[]]
    | ['check', ...membersAndWaiters: string[]]
  >(),
})

/** A child call of a fan-out, registered in its tree once and counted against its limits (src/log/fanout.ts). */
export const addChild = defineScript({
  name: 'addChild',
  keys: ['tree'],
  args: {
    childId: text,
    parentId: text,
    maxDepth: num,
    maxCalls: num,
    timeoutMs: num,
    now: num,
    baseDepth: arg<number | ''>(),
    baseRoot: text,
  },
  reply: reply<[status: 'exists' | 'added' | 'depth' | 'calls' | 'timeout', depthOrCount: number, root: string]>(),
})

/** A child of a fan-out landed: out of its parent's wait set; 1 when the parent must wake (src/log/fanout.ts). */
export const childLanded = defineScript({
  name: 'childLanded',
  keys: ['waits'],
  args: { childId: text, failed: arg<'1' | ''>() },
  reply: reply<0 | 1>(),
})
