/**
 * The typed contracts of the scripts that live in a slot of their own, not in a session's shard: a
 * limit's slots and lines (R17) and an (event, key)'s waits (R20). Part of ScriptContract (index.ts).
 */

/** The state of one key of one limit (R17), in the limit's own slot. */
type LimitKeys = [slots: string, waiting: string, starts: string, keysIndex: string, handed: string]

export interface LimitScripts {
  acquireSlot: {
    keys: LimitKeys
    args: [member: string, leaseMs: number, concurrency: number, rateLimit: number, perMs: number, key: string, recheckMs: number]
    reply:
      | ['granted', waitedMs: number, startedAt: number, ...promote: string[]]
      | ['wait', 'concurrency' | 'rate', untilMs: number, ...promote: string[]]
  }
  releaseSlot: {
    keys: LimitKeys
    args: [member: string, leaseMs: number, concurrency: number, rateLimit: number, perMs: number, key: string]
    reply: string[]
  }
  renewSlot: {
    keys: [slots: string]
    args: [member: string, leaseMs: number]
    reply: 0 | 1
  }
}

export interface EventScripts {
  awaitEvent: {
    keys: [eventHash: string]
    /** member, waiter value, now, waiter grace, timeout passed, then pairs of kept event uid and verdict */
    args: [member: string, waiter: string, now: number, graceMs: number, expired: '1' | '0', ...verdicts: string[]]
    reply: ['event', string, string] | ['timeout'] | ['waiting'] | ['check', ...uidsAndPayloads: string[]]
  }
  deliverEvent: {
    keys: [eventHash: string]
    args: [uid: string, id: string, payload: string, now: number, retentionMs: number, graceMs: number, ...checkedMembers: string[]]
    reply:
      | ['delivered', ...membersAndHarnesses: string[]]
      | ['stored']
      | ['duplicate', ...membersAndHarnesses: string[]]
      | ['check', ...membersAndWaiters: string[]]
  }
}
