import type { Logger } from 'pino'
import type { DeadWorkers } from '../liveness/index.js'
import type { OpenWork, SessionLog } from '../log/index.js'
import { enqueueParkedCall, type HarnessQueues } from '../queue/index.js'
import { repeatPasses } from './sweepTimer.js'

/** How often the workers look for due event timers: a wait's timeout fires at most about this late. */
const EVENT_TIMER_EVERY_MS = 1_000
/** Due timers taken a shard a look; more wait for the next look. */
const DUE_PER_LOOK = 200

export interface EventTimerDeps {
  openWork: OpenWork
  logFor(sessionId: string): SessionLog
  queuesByName(name: string): HarnessQueues | undefined
  logger: Logger
  /** Checks the jobs other worker processes hold, in the same look (src/liveness/). */
  dead?: DeadWorkers | undefined
}

/**
 * Enqueues the job of every call parked without one (a runTool call's event wait) whose timeout is
 * due on the served shards: the BullMQ delayed promotion's part for those calls. Every worker set
 * looks; two at once enqueue a call's job once (its id is the call's), and each takes its timer away
 * only after the job was added, so a crash in between leaves the timer to the next look. The same
 * look (one script a shard) lists the jobs other worker processes hold, for the check whether they
 * are gone (src/liveness/): that check sends no command of its own while the shard is idle.
 */
async function lookAtShards(deps: EventTimerDeps, shards: readonly number[]): Promise<number> {
  let fired = 0
  for (const shard of shards) {
    const { due, held, looked } = await deps.openWork.look(shard, Date.now(), DUE_PER_LOOK, deps.dead?.lookFor(shard))
    for (const item of due) {
      const log = deps.logFor(item.sessionId)
      const toolsOf = (harness: string) => deps.queuesByName(harness)?.of(item.sessionId).tools
      if (await enqueueParkedCall(log, item.id, toolsOf)) fired++
    }
    if (looked) await deps.dead?.seen(shard, held)
  }
  return fired
}

/** Looks for due event timers (and gone worker processes) every EVENT_TIMER_EVERY_MS (never overlapping) until stopped. */
export function startEventTimerLoop(deps: EventTimerDeps, shards: readonly number[], everyMs = EVENT_TIMER_EVERY_MS): { stop(): void } {
  return repeatPasses(
    () => lookAtShards(deps, shards),
    () => everyMs,
    (err) => deps.logger.warn({ err }, 'event timers: a look failed; the next one retries'),
  )
}
