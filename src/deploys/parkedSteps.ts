import { hasType, WAIT_STEP_PREFIX, waitStepValueOf, type SessionLog, type StoredCall } from '../log/index.js'
import type { DryReplay, ReplayedWait } from './dryReplay.js'

/** A problem with a step the call is parked on, before checkCall adds the call's session, id and tool. */
export interface ParkedStepProblem {
  code: 'wait_changed' | 'step_not_reached'
  step: string
  message: string
}

/** The call's waits not over yet: a wait step stored, its payload not, its timeout ahead. */
export function openWaitNames(call: StoredCall, now = Date.now()): string[] {
  const open: string[] = []
  for (const [name, value] of call.steps) {
    if (!name.startsWith(WAIT_STEP_PREFIX)) continue
    const step = name.slice(WAIT_STEP_PREFIX.length)
    if (!call.steps.has(step) && waitStepValueOf(value).until > now) open.push(step)
  }
  return open
}

/** The call's steps waiting on a retry backoff (R16): a failed try stored, no value, no end of the tries. */
export function retryingStepNames(call: StoredCall): string[] {
  return [...call.retries].filter(([name, state]) => !call.steps.has(name) && !state.ended).map(([name]) => name)
}

const describeWait = (w: ReplayedWait) =>
  `event ${JSON.stringify(w.event)} key ${JSON.stringify(w.key)}${w.scope === 'session' ? " (scope 'session')" : ''}`
const sameWait = (a: ReplayedWait, b: ReplayedWait) => a.event === b.event && a.key === b.key && a.scope === b.scope

/** The addresses the call's open waits registered, from their `harness.tool.wait` records (the last of each name). */
async function loggedWaits(log: SessionLog, toolCallId: string): Promise<Map<string, ReplayedWait>> {
  const found = new Map<string, ReplayedWait>()
  for (const { record } of await log.stream.read({ types: ['harness.tool.wait'] }))
    if (hasType(record, 'harness.tool.wait') && record.toolCallId === toolCallId)
      found.set(record.name, { event: record.event, key: record.key, ...(record.scope ? { scope: record.scope } : {}) })
  return found
}

/**
 * The steps a call is parked on that the new code changes: an open wait it registers with another
 * event, key or scope (`wait_changed`), an open wait or a step waiting on its retry backoff it never
 * reaches (`step_not_reached`). `where` says where the dry replay ended instead.
 */
export async function checkParkedSteps(log: SessionLog, call: StoredCall, replay: DryReplay, where: string): Promise<ParkedStepProblem[]> {
  const problems: ParkedStepProblem[] = []
  const open = openWaitNames(call)
  const logged = open.length > 0 ? await loggedWaits(log, call.toolCallId) : new Map<string, ReplayedWait>()
  for (const name of open) {
    const before = logged.get(name)
    const now = replay.waits.get(name)
    const was = before ? describeWait(before) : 'its event'
    if (!now)
      problems.push({
        code: 'step_not_reached',
        step: name,
        message:
          `the call waits at step \`${name}\` for ${was}, which the new code never reaches${where}: ` +
          'an event delivered to it is taken by the first wait the new code registers, and lost if it registers none',
      })
    else if (before && !sameWait(before, now))
      problems.push({
        code: 'wait_changed',
        step: name,
        message:
          `the call waits at step \`${name}\` for ${was}; the new code waits there for ${describeWait(now)}: ` +
          'an event sent to the old address before the call wakes is taken by the new wait, one sent after is kept there and no wait takes it',
      })
  }
  for (const name of retryingStepNames(call)) {
    if (replay.reached.has(name)) continue
    const { tries } = call.retries.get(name)!
    problems.push({
      code: 'step_not_reached',
      step: name,
      message:
        `step \`${name}\` waits on its retry backoff (${tries} failed tr${tries === 1 ? 'y' : 'ies'}), which the new code never reaches${where}: ` +
        'its tries would start over, under a new idempotency key',
    })
  }
  return problems
}
