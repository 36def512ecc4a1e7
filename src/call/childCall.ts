import { createHash } from 'node:crypto'
import { DEFAULT_SUBAGENT_LIMITS, type Harness, type ResolvedLimit } from '../core/index.js'
import { childCancelledError } from '../fanout/index.js'
import type { LineLogger } from '../logger.js'
import { takeSlot, type HeldSlot } from '../limits/slot.js'
import type { Fence, InputState, SessionLog } from '../log/index.js'
import { wakeCall, type HarnessQueues } from '../queue/index.js'
import { Park } from '../tool/index.js'
import { takeCallSlot, type CallSlot } from './limitedCall.js'

interface SlotCall {
  sessionId: string
  toolCallId: string
  name: string
  input: unknown
}

/** The tree's width limit (R24): `maxConcurrent` children of one tree run at once, keyed by (session, root). */
function treeLimit(harness: Harness, sessionId: string, root: string): ResolvedLimit {
  const limits = harness.subagents ?? DEFAULT_SUBAGENT_LIMITS
  // a hash of the two ids (each up to 200 characters): one key per tree, within a limit key's 200
  const key = createHash('sha256').update(`${sessionId}\0${root}`).digest('hex').slice(0, 40)
  return { scope: 'tree', concurrency: limits.maxConcurrent, rateLimit: 0, perMs: 0, key: () => key }
}

/** takeSlots, for a call that may need a slot (a child of a fan-out, a harness with limits); else undefined, no promise. */
export function slotsOf(...args: Parameters<typeof takeSlots>): Promise<CallSlot | 'landed'> | undefined {
  const [deps, , call] = args
  return call.toolCallId.includes('.') || deps.harness.limits ? takeSlots(...args) : undefined
}

/**
 * The slots an attempt takes before its tool runs: a child of a fan-out (an id `<parent>.<name>`
 * its tree knows) first its tree's width slot (R24; a child its parent cancelled lands `cancelled`
 * here without running: 'landed'), then its tool's limit slot (R17). A wait for either parks the
 * call like a sleep; a slot taken and then not needed (the other one waits) is given back.
 */
export async function takeSlots(
  deps: { harness: Harness; queuesOf(harness: Harness): HarnessQueues },
  log: SessionLog,
  call: SlotCall,
  input: InputState | null,
  fence: Fence,
  logger: LineLogger,
  context: unknown,
): Promise<CallSlot | 'landed'> {
  const { harness } = deps
  const queues = deps.queuesOf(harness)
  let tree: HeldSlot | undefined
  if (call.toolCallId.includes('.')) {
    const child = await log.fanout.childAtBegin(call.toolCallId)
    if (child.cancelled !== undefined) {
      await log.calls.landResult(fence, call.name, { error: childCancelledError(child.cancelled) })
      await notifyParent(log, queues, call.toolCallId, true)
      logger.info('child of a fan-out was cancelled before this attempt: landed the cancelled tool error')
      return 'landed'
    }
    const limits = harness.subagents ?? DEFAULT_SUBAGENT_LIMITS
    // a width at or above the tree's count can never bind: no slot to take (two scripts a child less)
    if (child.root !== undefined && limits.maxConcurrent < limits.maxCalls) {
      const place = { redis: queues.connection, prefix: queues.prefix, harness: harness.name, lockMs: harness.durability.lockMs }
      const limit = treeLimit(harness, call.sessionId, child.root)
      const subject = { of: 'tool call' as const, member: `${call.sessionId}|${call.toolCallId}`, sessionId: call.sessionId, input: null }
      const slot = await takeSlot(place, limit, subject, (member) => {
        const at = member.indexOf('|')
        return wakeCall(queues, member.slice(0, at), member.slice(at + 1))
      })
      if (slot.kind === 'wait') return { park: new Park('limit', slot.until, 'tree'), handed: slot.handed }
      tree = slot
    }
  }
  const taking = takeCallSlot(harness, queues, call, context, logger)
  const own = taking && (await taking)
  if (!tree) return own
  if (!own) return { held: tree }
  if ('held' in own) return { held: bothSlots(tree, own.held) }
  // its tool's limit makes it wait (or fails it): the tree's slot goes back meanwhile
  await tree.release().catch(() => {})
  return own
}

/** Two slots held as one: confirmed, lost and released together. */
function bothSlots(a: HeldSlot, b: HeldSlot): HeldSlot {
  return {
    kind: 'held',
    key: b.key,
    waitedMs: Math.max(a.waitedMs, b.waitedMs),
    startedAt: b.startedAt,
    confirm() {
      const x = a.confirm()
      const y = b.confirm()
      if (!x || !y) return x ?? y
      return Promise.all([x, y]).then(() => undefined)
    },
    get lost() {
      return a.lost ?? b.lost
    },
    async release() {
      await Promise.all([a.release(), b.release()])
    },
  }
}

/** notifyParent for a call that may be a child (its id has a `.`), not awaited: a failure is logged, the parent re-checks. */
export function wakeParent(log: SessionLog, queues: HarnessQueues, toolCallId: string, failed: boolean, logger: LineLogger): void {
  if (!toolCallId.includes('.')) return
  notifyParent(log, queues, toolCallId, failed).catch((err: unknown) => logger.warn({ err }, 'wake of the parent failed; it re-checks'))
}

/**
 * A child of a fan-out landed: it leaves its parent's wait set, and the parent's delayed job is
 * promoted once none is left (or it failed, under cancel-siblings). A lost wake-up costs the parent
 * its re-check interval, never its children's results.
 */
async function notifyParent(log: SessionLog, queues: HarnessQueues, toolCallId: string, failed: boolean): Promise<void> {
  if (!toolCallId.includes('.')) return
  if (!(await log.fanout.landed(toolCallId, failed))) return
  const parentId = toolCallId.slice(0, toolCallId.lastIndexOf('.'))
  await wakeCall(queues, log.sessionId, parentId)
}
