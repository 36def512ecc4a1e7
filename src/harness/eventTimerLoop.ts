import type { Logger } from 'pino'
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
}

/**
 * Enqueues the job of every call parked without one (a runTool call's event wait) whose timeout is
 * due on the served shards: the BullMQ delayed promotion's part for those calls. Every worker set
 * looks; two at once enqueue a call's job once (its id is the call's), and each takes its timer away
 * only after the job was added, so a crash in between leaves the timer to the next look.
 */
async function fireDueEventTimers(deps: EventTimerDeps, shards: readonly number[]): Promise<number> {
  let fired = 0
  for (const item of await deps.openWork.olderThan('eventTimers', Date.now(), DUE_PER_LOOK, shards)) {
    const log = deps.logFor(item.sessionId)
    const toolsOf = (harness: string) => deps.queuesByName(harness)?.of(item.sessionId).tools
    if (await enqueueParkedCall(log, item.id, toolsOf)) fired++
  }
  return fired
}

/** Looks for due event timers every EVENT_TIMER_EVERY_MS (never overlapping) until stopped. */
export function startEventTimerLoop(deps: EventTimerDeps, shards: readonly number[], everyMs = EVENT_TIMER_EVERY_MS): { stop(): void } {
  return repeatPasses(
    () => fireDueEventTimers(deps, shards),
    () => everyMs,
    (err) => deps.logger.warn({ err }, 'event timers: a look failed; the next one retries'),
  )
}
