import { DuplicateStepError, ToolCallConflictError, ToolCallError, UnknownToolError } from '../errors/index.js'
import { DEFAULT_SUBAGENT_LIMITS, toolNames, toolOf, type Harness } from '../core/index.js'
import type { CallState, SessionLog } from '../log/index.js'
import { enqueueCall, type HarnessQueues } from '../queue/index.js'
import {
  encodeChecked,
  Park,
  toJsonCopy,
  type ChildGroup,
  type ChildGroupOptions,
  type ChildHandle,
  type ChildOptions,
  type ChildSettled,
  type ChildToolRef,
  type ChildTools,
} from '../tool/index.js'
import { cancelChildren } from './cancelChildren.js'
import { childCallId, treeLimitError } from './names.js'

/** A parked parent looks at its children again this often, in case a child's wake-up was lost (a crash between its landing and the wake). */
const CHILDREN_RECHECK_MS = 10_000

interface ChildToolsDeps {
  harness: Harness
  log: SessionLog
  queues: HarnessQueues
  /** The parent call: its id names its children. */
  parentId: string
}

/** What the call's attempt reads back: the park its children's wait hit, even if the tool caught it. */
interface ChildToolsHandle {
  tools: ChildTools
  readonly parked: Park | null
}

interface Started extends ChildHandle {
  input: unknown
  /** Requested and enqueued by this attempt: no repair to make for it. */
  now: boolean
}

/**
 * `ctx.tools` of one attempt of a durable call (docs/fan-out.md). A child is a call of the same session
 * with the id `<parent>.<name>` (R23: one per (parent call, name), whatever reruns the parent), started
 * as a runTool call is; its place in the tree is counted once, against the limits, in one write
 * (addChild.lua, R24). A wait for unsettled children parks the parent (kind `children`, no worker
 * slot); the last child to land (childLanded.lua) wakes it, and it runs from the top again.
 */
export function createChildTools(deps: ChildToolsDeps): ChildToolsHandle {
  const { harness, log, queues, parentId } = deps
  const limits = harness.subagents ?? DEFAULT_SUBAGENT_LIMITS
  const used = new Set<string>()
  const byId = new Map<string, Started>()
  let parked: Park | null = null

  const start = async (ref: ChildToolRef, input: unknown, options: ChildOptions): Promise<ChildHandle> => {
    if (parked) throw parked
    const toolName = typeof ref === 'string' ? ref : ref?.name
    if (typeof toolName !== 'string' || !toolOf(harness, toolName)) throw new UnknownToolError(String(toolName), toolNames(harness))
    const name = options?.name
    const toolCallId = childCallId(parentId, name)
    if (used.has(name)) throw new DuplicateStepError(parentId, name)
    used.add(name)
    const what = `Input of child "${name}" (tool "${toolName}")`
    const copy = toJsonCopy(input, what)
    encodeChecked(copy, what, harness.durability.maxValueBytes)
    const place = await log.fanout.addChild(toolCallId, parentId, limits)
    if (place.status === 'depth' || place.status === 'calls' || place.status === 'timeout')
      throw treeLimitError(toolName, toolCallId, place, limits)
    const handle: Started = { name, toolCallId, tool: toolName, input: copy, now: place.status === 'added' }
    byId.set(toolCallId, handle)
    if (place.status === 'added') await request(handle)
    return { name, toolCallId, tool: toolName }
  }

  /** Logs the child's request (once) and enqueues its job (a no-op while it exists). */
  const request = async (child: Started) => {
    if ((await log.calls.requestCall(child.toolCallId, child.tool, child.input)) === 'conflict')
      throw new ToolCallConflictError(child.toolCallId)
    await enqueueCall(queues, harness, log.sessionId, { toolCallId: child.toolCallId, name: child.tool, input: child.input })
  }

  const startedOf = (handle: ChildHandle): Started => {
    const child = byId.get(handle?.toolCallId)
    if (!child) throw new TypeError('ctx.tools.wait: a handle this call did not start (start it with ctx.tools.start in this run).')
    return child
  }

  /**
   * The children's outcomes once all settled (under cancel-siblings: or one failed, the others then
   * cancelled); else the parent parks until they do.
   */
  const settle = async (children: readonly Started[], cancelSiblings: boolean): Promise<ChildSettled[]> => {
    if (parked) throw parked
    const states = await log.fanout.states(children.map((c) => c.toolCallId))
    // a child started by an earlier run whose call never began: its job may be lost (a crash after its request)
    await Promise.all(children.map((c, i) => (states[i] === null && !c.now ? request(c) : undefined)))
    const failed = children.findIndex((_, i) => outcomeOf(states[i])?.status === 'failed')
    if (cancelSiblings && failed >= 0) {
      const open = children.filter((_, i) => states[i]?.status !== 'done')
      await cancelChildren(deps, open, `its sibling ${children[failed]!.name} failed`)
      throw failure(children[failed]!, states[failed]!)
    }
    const pending = children.filter((_, i) => states[i]?.status !== 'done')
    if (pending.length === 0) return children.map((c, i) => ({ name: c.name, toolCallId: c.toolCallId, ...outcomeOf(states[i])! }))
    await log.fanout.await(
      parentId,
      pending.map((c) => c.toolCallId),
      cancelSiblings,
    )
    const ids = pending.map((c) => c.toolCallId)
    // the wake-up that came while this attempt still ran found no parked job: looked at again once parked
    const woken = async () => {
      const now = await log.fanout.states(ids)
      return now.every((s) => s?.status === 'done') || (cancelSiblings && now.some((s) => outcomeOf(s)?.status === 'failed'))
    }
    parked = new Park('children', Date.now() + CHILDREN_RECHECK_MS, `${pending.length} children`, woken)
    throw parked
  }

  const wait = async (handles: readonly ChildHandle[]): Promise<unknown[]> => {
    const children = handles.map(startedOf)
    const outcomes = await settle(children, false)
    const firstFailed = outcomes.findIndex((o) => o.status === 'failed')
    if (firstFailed >= 0) {
      const o = outcomes[firstFailed]!
      throw new ToolCallError(children[firstFailed]!.tool, o.toolCallId, o.status === 'failed' ? o.error : { message: 'failed' })
    }
    return outcomes.map((o) => (o.status === 'completed' ? o.result : undefined))
  }

  const group = (options: ChildGroupOptions = {}): ChildGroup => {
    const onFailure = options?.onFailure ?? 'collect'
    if (onFailure !== 'collect' && onFailure !== 'cancel-siblings')
      throw new TypeError(`ctx.tools.group: onFailure must be 'collect' or 'cancel-siblings', got ${JSON.stringify(onFailure)}.`)
    const members: Started[] = []
    const groupStart = async (ref: ChildToolRef, input: unknown, opts: ChildOptions) => {
      const handle = await start(ref, input, opts)
      members.push(startedOf(handle))
      return handle
    }
    const settled = () => settle([...members], onFailure === 'cancel-siblings')
    return {
      start: groupStart,
      async run(ref, input, opts) {
        const handle = await groupStart(ref, input, opts)
        const outcome = (await settled()).find((o) => o.toolCallId === handle.toolCallId)!
        if (outcome.status === 'failed') throw new ToolCallError(handle.tool, handle.toolCallId, outcome.error)
        return outcome.result
      },
      settled,
    }
  }

  const tools: ChildTools = {
    start,
    wait,
    group,
    async run(ref, input, options) {
      return (await wait([await start(ref, input, options)]))[0]
    },
  }
  return {
    tools,
    get parked() {
      return parked
    },
  }
}

/** A landed child's outcome; undefined while it runs, waits or parks. */
function outcomeOf(
  state: CallState | null | undefined,
): { status: 'completed'; result: unknown } | { status: 'failed'; error: { message: string; code?: string } } | undefined {
  if (state?.status !== 'done' || !state.result) return undefined
  const record = state.result
  if (record.error) return { status: 'failed', error: record.error }
  return { status: 'completed', result: record.result }
}

function failure(child: Started, state: CallState): ToolCallError {
  const outcome = outcomeOf(state)
  return new ToolCallError(child.tool, child.toolCallId, outcome?.status === 'failed' ? outcome.error : { message: 'failed' })
}
