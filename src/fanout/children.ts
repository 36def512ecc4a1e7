import { DuplicateStepError, ToolCallConflictError, ToolCallError } from '../errors/index.js'
import { DEFAULT_SUBAGENT_LIMITS, type Harness } from '../core/index.js'
import type { CallState, SessionLog, TreeRef } from '../log/index.js'
import { enqueueCall, type HarnessQueues } from '../queue/index.js'
import { encodeChecked, Park, toJsonCopy } from '../tool/index.js'
import { cancelChildren } from './cancelChildren.js'
import { childCallId, treeLimitError } from './names.js'
import { placeChild, treeOf, type AgentHost } from './place.js'

/** A parked parent looks at its children again this often, in case a child's wake-up was lost (a crash between its landing and the wake). */
const CHILDREN_RECHECK_MS = 10_000

export interface FanoutDeps {
  harness: Harness
  log: SessionLog
  queues: HarnessQueues
  logFor(sessionId: string): SessionLog
  /** The parent call: its id names its children. */
  parentId: string
  agents?: AgentHost | undefined
}

/** A child this attempt started (or found started by an earlier run). */
export interface Child {
  name: string
  toolCallId: string
  /** The call's name: a tool's, or a child agent's (place.ts agentCallName). */
  callName: string
  input: unknown
  /** Requested and enqueued by this attempt: no repair to make for it. */
  now: boolean
}

/** How a landed child ended; undefined while it runs, waits or parks. */
export type Outcome = { status: 'completed'; result: unknown } | { status: 'failed'; error: { message: string; code?: string } }

interface SettleOptions {
  cancelSiblings: boolean
  /** A group's width: its children beyond it were held back at their start and are requested here. */
  maxConcurrent?: number | undefined
}

/**
 * The children of one attempt of a durable call (docs/fan-out.md), the engine under `ctx.tools` and
 * `ctx.agents`. A child is a call of the same session with the id `<parent>.<name>` (R23: one per
 * (parent call, name), whatever reruns the parent), registered once in its tree against the limits
 * (R24, place.ts). A wait for unsettled children parks the parent (kind `children`, no worker slot);
 * a child's landing (childLanded.lua) wakes it, and it runs from the top again.
 */
export function createChildren(deps: FanoutDeps) {
  const { harness, log, queues, parentId } = deps
  const limits = harness.subagents ?? DEFAULT_SUBAGENT_LIMITS
  const used = new Set<string>()
  const byId = new Map<string, Child>()
  let parked: Park | null = null
  let tree: Promise<TreeRef | undefined> | undefined

  /** Logs the child's request (once) and enqueues its job (a no-op while it exists). */
  const request = async (child: Child) => {
    if ((await log.calls.requestCall(child.toolCallId, child.callName, child.input)) === 'conflict')
      throw new ToolCallConflictError(child.toolCallId)
    await enqueueCall(queues, harness, log.sessionId, { toolCallId: child.toolCallId, name: child.callName, input: child.input })
  }

  /** Starts a child: registered in its tree, then requested, unless `held` (a group's width starts it later). */
  const start = async (callName: string, label: string, input: unknown, name: unknown, held = false): Promise<Child> => {
    if (parked) throw parked
    const toolCallId = childCallId(parentId, name)
    const childName = String(name) // a string: childCallId checked it
    if (used.has(childName)) throw new DuplicateStepError(parentId, childName)
    used.add(childName)
    const what = `Input of child "${childName}" (${label})`
    const copy = toJsonCopy(input, what)
    encodeChecked(copy, what, harness.durability.maxValueBytes)
    const place = await placeChild(log, deps.logFor, await (tree ??= treeOf(log)), { id: toolCallId, parent: parentId }, limits)
    if (place.status === 'depth' || place.status === 'calls' || place.status === 'timeout')
      throw treeLimitError(callName, toolCallId, place, limits)
    const child: Child = { name: childName, toolCallId, callName, input: copy, now: place.status === 'added' && !held }
    byId.set(toolCallId, child)
    if (child.now) await request(child)
    return child
  }

  const startedOf = (toolCallId: string | undefined, what: string): Child => {
    const child = toolCallId === undefined ? undefined : byId.get(toolCallId)
    if (!child) throw new TypeError(`${what}: a handle this call did not start (start it in this run).`)
    return child
  }

  /**
   * The children's outcomes once all settled (under cancel-siblings: or one failed, the others then
   * cancelled); else the parent parks until they do (or, with children held back, until one lands).
   */
  const settle = async (children: readonly Child[], options: SettleOptions): Promise<Array<Outcome & { child: Child }>> => {
    if (parked) throw parked
    const ids = children.map((c) => c.toolCallId)
    const width = options.maxConcurrent
    const looks =
      width === undefined ? (await log.fanout.states(ids)).map((state) => ({ state, requested: true })) : await log.fanout.look(ids)
    const states = looks.map((l) => l.state)
    // a child started by an earlier run whose call never began: its job may be lost (a crash after its request)
    await Promise.all(children.map((c, i) => (looks[i]!.requested && states[i] === null && !c.now ? request(c) : undefined)))
    const failed = children.findIndex((_, i) => outcomeOf(states[i])?.status === 'failed')
    if (options.cancelSiblings && failed >= 0) {
      const open = children.filter((_, i) => states[i]?.status !== 'done')
      await cancelChildren(deps, open, `its sibling ${children[failed]!.name} failed`)
      throw failure(children[failed]!, states[failed]!)
    }
    if (width !== undefined) {
      // the group's width: held-back children start in start order as running ones land
      let running = looks.filter((l) => l.requested && l.state?.status !== 'done').length
      for (const [i, c] of children.entries()) {
        if (running >= width) break
        if (looks[i]!.requested) continue
        await request(c)
        looks[i] = { state: null, requested: true }
        running++
      }
    }
    const pending = children.filter((_, i) => states[i]?.status !== 'done')
    if (pending.length === 0) return children.map((c, i) => ({ child: c, ...outcomeOf(states[i])! }))
    const waiting = pending.filter((c) => looks[ids.indexOf(c.toolCallId)]!.requested).map((c) => c.toolCallId)
    const heldBack = waiting.length < pending.length
    await log.fanout.await(parentId, waiting, heldBack ? 'any' : options.cancelSiblings ? 'cancel-siblings' : 'all')
    // the wake-up that came while this attempt still ran found no parked job: looked at again once parked
    const woken = async () => {
      const now = await log.fanout.states(waiting)
      if (heldBack) return now.some((s) => s?.status === 'done')
      return now.every((s) => s?.status === 'done') || (options.cancelSiblings && now.some((s) => outcomeOf(s)?.status === 'failed'))
    }
    parked = new Park('children', Date.now() + CHILDREN_RECHECK_MS, `${pending.length} children`, woken)
    throw parked
  }

  return {
    start,
    settle,
    startedOf,
    get parked() {
      return parked
    },
  }
}

export type Children = ReturnType<typeof createChildren>

/** A landed child's outcome; undefined while it runs, waits or parks. */
function outcomeOf(state: CallState | null | undefined): Outcome | undefined {
  if (state?.status !== 'done' || !state.result) return undefined
  const record = state.result
  if (record.error) return { status: 'failed', error: record.error }
  return { status: 'completed', result: record.result }
}

function failure(child: Child, state: CallState): ToolCallError {
  const outcome = outcomeOf(state)
  return new ToolCallError(child.callName, child.toolCallId, outcome?.status === 'failed' ? outcome.error : { message: 'failed' })
}

/** A group's options, checked: its failure mode and its width. */
export function groupOptions(options: { onFailure?: unknown; maxConcurrent?: unknown } | undefined, what: string): SettleOptions {
  const onFailure = options?.onFailure ?? 'collect'
  if (onFailure !== 'collect' && onFailure !== 'cancel-siblings')
    throw new TypeError(`${what}.group: onFailure must be 'collect' or 'cancel-siblings', got ${JSON.stringify(onFailure)}.`)
  const width = options?.maxConcurrent
  if (width !== undefined && (typeof width !== 'number' || !Number.isInteger(width) || width < 1))
    throw new TypeError(`${what}.group: maxConcurrent must be a whole number of at least 1, got ${JSON.stringify(width)}.`)
  return { cancelSiblings: onFailure === 'cancel-siblings', maxConcurrent: width }
}
