import { callStateOf, type CallState } from './callState.js'
import { scripts } from './commands/index.js'
import { messageKey } from './formats.js'
import type { LogStream } from './stream.js'

/** A fan-out child's place in its tree (addChild.lua): registered now or before, or refused by a limit. */
export type ChildPlace =
  | { status: 'added' | 'exists'; depth: number; root: string }
  | { status: 'depth'; depth: number; root: string }
  | { status: 'calls'; count: number; root: string }
  | { status: 'timeout'; ageMs: number; root: string }

/** The limits addChild checks (defineHarness `subagents.limits`). */
export interface TreeLimits {
  maxDepth: number
  maxCalls: number
  timeoutMs: number
}

/** The cancel-siblings mark of a wait set: not a call id (ids are [A-Za-z0-9._-]). */
const CANCEL_SIBLINGS = '!'
/** The wait-for-any mark of a wait set. */
const WAIT_FOR_ANY = '*'

/** The key of a parked parent's wait set: the children it still waits for. */
function waitsKey(stream: LogStream, parentId: string): string {
  return `${stream.keys.tree}:w:${parentId}`
}

/**
 * A fan-out's parent of a child call id, as the id names it (`<parentId>.<name>`, a name has no `.`):
 * undefined for an id with no `.`. A call id with a `.` that is no child names a parent with no wait
 * set: its landing wakes nothing.
 */
export function parentOfChild(toolCallId: string): string | undefined {
  const at = toolCallId.lastIndexOf('.')
  return at > 0 ? toolCallId.slice(0, at) : undefined
}

/**
 * The fan-out trees of one session (R23, R24): each child registered once with its depth and root,
 * its tree's count checked against `maxCalls` in the same write; a parked parent's wait set, which a
 * child's landing leaves, and wakes the parent once empty (or at a failure, under cancel-siblings).
 */
export class FanoutLedger {
  constructor(private readonly stream: LogStream) {}

  /**
   * Registers a child once, checked against the limits. `base`: the place the parent stands in when
   * this hash does not know it (a call of a child agent's session stands in its agent's place).
   */
  async addChild(childId: string, parentId: string, limits: TreeLimits, base?: { depth: number; root: string }): Promise<ChildPlace> {
    const { maxDepth, maxCalls, timeoutMs } = limits
    const args = {
      childId,
      parentId,
      maxDepth,
      maxCalls,
      timeoutMs,
      now: Date.now(),
      baseDepth: base?.depth ?? 0,
      baseRoot: base?.root ?? '',
    }
    const [status, n, root] = await this.stream.script(scripts.addChild, { keys: { tree: this.stream.keys.tree }, args }, true)
    if (status === 'calls') return { status, count: Number(n), root }
    if (status === 'timeout') return { status, ageMs: Number(n), root }
    return { status, depth: Number(n), root }
  }

  /**
   * Marks children cancelled (`<childId>\0x` -> reason): one not begun lands `cancelled` at its begin;
   * and tells every process (a `cancel` message on the shard's channel) to stop the attempt of one
   * that runs now (its ctx.abortSignal fires, no step starts after).
   */
  async markCancelled(childIds: readonly string[], reason: string): Promise<void> {
    const fields = childIds.flatMap((id) => [`${id}\0x`, reason])
    const { redis, keys, index, publish, sessionId } = this.stream
    await this.stream.command('cancelChildren', () => redis.hset(keys.tree, ...fields), true)
    // a hint: a message lost (a reconnect) leaves a running child to its next begin, as before
    await Promise.all(childIds.map((id) => redis.call(publish, index.events, `${messageKey('cancel', sessionId, id)}\n${reason}`))).catch(
      () => {},
    )
  }

  /**
   * A child's tree at its begin: its root and depth in this session's hash (undefined: no child of a
   * fan-out) and the reason it was cancelled, if it was; one command.
   */
  async childAtBegin(toolCallId: string): Promise<{ root?: string; depth?: number; cancelled?: string }> {
    const [place, cancelled] = await this.stream.command('childAtBegin', () =>
      this.stream.redis.hmget(this.stream.keys.tree, toolCallId, `${toolCallId}\0x`),
    )
    const [depth, root] = place?.split('|') ?? []
    return { ...(root ? { root, depth: Number(depth) } : {}), ...(cancelled ? { cancelled } : {}) }
  }

  /** Every child in this session of the tree of `rootId` (one HGETALL of the session's trees; a place of another session's call, `<session>/<call>`, is not one). */
  async descendants(rootId: string): Promise<string[]> {
    const all = await this.stream.command('treeOf', () => this.stream.redis.hgetall(this.stream.keys.tree))
    return Object.entries(all)
      .filter(([field, value]) => !field.includes('\0') && !field.includes('/') && value.split('|')[1] === rootId)
      .map(([field]) => field)
  }

  /** Every place of this session's trees: a child's id, depth and root (a root call's id, or `~<inputId>` for a turn's agentTool calls), one HGETALL. */
  async places(): Promise<Array<{ id: string; depth: number; root: string }>> {
    const all = await this.stream.command('treeOf', () => this.stream.redis.hgetall(this.stream.keys.tree))
    return Object.entries(all)
      .filter(([field]) => !field.includes('\0') && !field.includes('/'))
      .map(([id, value]) => {
        const [depth, root] = value.split('|')
        return { id, depth: Number(depth), root: root ?? '' }
      })
  }

  /** The states of the children, in order (null: not begun), read in one command. */
  async states(childIds: readonly string[]): Promise<Array<CallState | null>> {
    if (childIds.length === 0) return []
    const fields = childIds.flatMap((id) => [id, `${id}\0result`, `${id}\0names`])
    const values = await this.stream.command('childStates', () => this.stream.redis.hmget(this.stream.keys.calls, ...fields))
    return childIds.map((_, i) => {
      const state = values[i * 3]
      return state ? callStateOf(state, values[i * 3 + 1] ?? null, values[i * 3 + 2] ?? null) : null
    })
  }

  /** The children's states, and whether each was requested (a group with maxConcurrent holds some back), in one command. */
  async look(childIds: readonly string[]): Promise<Array<{ state: CallState | null; requested: boolean }>> {
    if (childIds.length === 0) return []
    const fields = childIds.flatMap((id) => [id, `${id}\0result`, `${id}\0names`, `${id}\0req`])
    const values = await this.stream.command('childStates', () => this.stream.redis.hmget(this.stream.keys.calls, ...fields))
    return childIds.map((_, i) => {
      const state = values[i * 4]
      return {
        state: state ? callStateOf(state, values[i * 4 + 1] ?? null, values[i * 4 + 2] ?? null) : null,
        requested: !!state || values[i * 4 + 3] !== null,
      }
    })
  }

  /**
   * The parent parks waiting for `childIds`: its wait set is these, and a mark of how it wakes: at
   * the first failure too ('cancel-siblings'), or at the first landing ('any': a group waiting for a place).
   */
  async await(parentId: string, childIds: readonly string[], wakeAt: 'all' | 'cancel-siblings' | 'any'): Promise<void> {
    const key = waitsKey(this.stream, parentId)
    const members = wakeAt === 'all' ? [...childIds] : [...childIds, wakeAt === 'any' ? WAIT_FOR_ANY : CANCEL_SIBLINGS]
    await this.stream.command(
      'awaitChildren',
      () =>
        this.stream.redis
          .multi()
          .del(key)
          .sadd(key, ...members)
          .exec(),
      true,
    )
  }

  /** A child landed: true when its parent must wake (its wait set emptied, or a failure under cancel-siblings). */
  async landed(childId: string, failed: boolean): Promise<boolean> {
    const parentId = parentOfChild(childId)
    if (parentId === undefined) return false
    const keys = { waits: waitsKey(this.stream, parentId) }
    return (await this.stream.script(scripts.childLanded, { keys, args: { childId, failed: failed ? '1' : '' } }, true)) === 1
  }
}
