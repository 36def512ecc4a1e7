import { InvalidTurnFilterError, UnknownHarnessError } from '../errors/index.js'
import { assertSessionId, sealedKeyIds, type RedisClient, type SessionLog } from '../log/index.js'
import { listTurns, type TurnsFilter, type TurnsPage, type TurnSummary } from '../ops/index.js'
import { pauseQueues, queuesPaused, resumeQueues, type HarnessQueues } from '../queue/index.js'
import type { Harness } from './defineHarness.js'
import type { Session } from './session.js'
import { hostUsage, type HostUsage, type UsageFilter } from './hostUsage.js'
import { readTree, type TreeNode } from './fanoutTree.js'

/** Options of `host.replay` / `host.cancel`: the batch size, progress, who does it. */
export interface BulkOptions {
  /** Turns a batch (default 100): each batch is one page of `host.turns`. */
  batch?: number
  /** Called after each batch with the turns done so far and the turns looked at. */
  onProgress?(progress: { done: number; seen: number }): void
  /** Who reran or aborted (a principal's string id), recorded on each turn's record. */
  principal?: string
  /** The reason an aborted turn is given (`host.cancel`). */
  reason?: string
}

/** What operators do to many turns or a whole harness (host.turns, replay, cancel, pause, resume). */
export interface HostOperations {
  /** Turns by status, harness, time and tags, newest first, in pages (`{ items, cursor }`); a page costs O(the page), not O(sessions). */
  turns(filter?: TurnsFilter): Promise<TurnsPage>
  /**
   * Reruns every turn the filter finds (status 'failed' or 'aborted', default 'failed'), in batches:
   * `session.rerun` each, so kept results stay kept (R19). A turn rerun leaves the failed index, so a
   * second replay with the same filter finds nothing to do. Returns how many were rerun.
   */
  replay(filter?: TurnsFilter, options?: BulkOptions): Promise<{ count: number }>
  /** Aborts every turn the filter finds (status 'open' by default; 'failed' or 'aborted' ends calls they left parked). Returns how many. */
  cancel(filter?: TurnsFilter, options?: BulkOptions): Promise<{ count: number }>
  /**
   * Pauses a harness in every shard: new turns and calls wait in their queues (not failed), running
   * calls finish, parked calls that wake wait too. Survives restarts (the queues hold it) until `resume`.
   */
  pause(harnessName: string): Promise<void>
  /** Resumes a paused harness: what waited runs, in order. */
  resume(harnessName: string): Promise<void>
  /** Whether a harness is paused. */
  paused(harnessName: string): Promise<boolean>
  /** Spend by UTC day, model and principal, from the harnesses' day hashes (docs/spend.md): O(days × shards), never the sessions. */
  usage(filter?: UsageFilter): Promise<HostUsage>
  /**
   * The fan-out trees of a session (docs/fan-out.md "Seen from above"): each call that started
   * children, with them, and each child agent's session with its own tree; `[]` for none.
   */
  tree(sessionId: string): Promise<TreeNode[]>
  /**
   * The key ids a session's log sealed its values under, with how many values each (docs/encryption.md):
   * the keys a rotation must keep while the session lives. `{}` for a session written without a codec.
   */
  keys(sessionId: string): Promise<Record<string, number>>
}

export interface HostOpsDeps {
  redis: RedisClient
  prefix: string
  shards: number
  harnesses: ReadonlyMap<string, Harness>
  queuesOf(harness: Harness): HarnessQueues
  open(harness: Harness, sessionId: string): Session
  logFor(sessionId: string): SessionLog
}

/** The host's operator API over its harnesses' turns indexes and queues. */
export function hostOperations(deps: HostOpsDeps): HostOperations {
  const names = () => [...deps.harnesses.keys()]
  const turns = (filter: TurnsFilter = {}) => listTurns(deps.redis, deps.prefix, deps.shards, names(), filter)
  const queuesNamed = (name: string) => {
    const harness = deps.harnesses.get(name)
    if (!harness) throw new UnknownHarnessError(name)
    return deps.queuesOf(harness)
  }
  /** Each turn the filter finds, one page a batch; `act` says whether it did something to it. */
  const each = async (filter: TurnsFilter, options: BulkOptions, act: (session: Session, turn: TurnSummary) => Promise<boolean>) => {
    let done = 0
    let seen = 0
    let cursor: string | undefined
    do {
      const page = await turns({ ...filter, limit: options.batch ?? 100, ...(cursor ? { cursor } : {}) })
      for (const turn of page.items) {
        seen++
        if (await act(deps.open(deps.harnesses.get(turn.harness)!, turn.sessionId), turn)) done++
      }
      options.onProgress?.({ done, seen })
      cursor = page.cursor
    } while (cursor)
    return { count: done }
  }
  const by = (options: BulkOptions) => (options.principal !== undefined ? { principal: options.principal } : {})
  return {
    turns,
    replay(filter = {}, options = {}) {
      const status = filter.status ?? 'failed'
      if (status !== 'failed' && status !== 'aborted')
        throw new InvalidTurnFilterError('status', status, "replay takes 'failed' or 'aborted' turns")
      return each({ ...filter, status }, options, (session, turn) => session.rerun(turn.inputId, by(options)))
    },
    cancel(filter = {}, options = {}) {
      const status = filter.status ?? 'open'
      if (status === 'completed') throw new InvalidTurnFilterError('status', status, "cancel takes 'open', 'failed' or 'aborted' turns")
      return each({ ...filter, status }, options, (session, turn) =>
        session.abort(turn.inputId, options.reason ?? 'Cancelled by an operator.', by(options)),
      )
    },
    pause: (name) => pauseQueues(queuesNamed(name)),
    resume: (name) => resumeQueues(queuesNamed(name)),
    paused: (name) => queuesPaused(queuesNamed(name)),
    usage: (filter) => hostUsage(deps.redis, deps.prefix, deps.shards, names(), filter),
    tree(sessionId) {
      assertSessionId(sessionId)
      return readTree(deps.logFor(sessionId), deps.logFor)
    },
    keys(sessionId) {
      assertSessionId(sessionId)
      return sealedKeyIds(deps.logFor(sessionId).stream)
    },
  }
}
