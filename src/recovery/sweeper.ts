import type { Logger } from 'pino'
import type { Harness } from '../core/index.js'
import { eventTimerOf, type OpenItem, type OpenWork, type SessionLog } from '../log/index.js'
import { enqueueCall, enqueueTurn, inspectCallJob, inspectTurnJob, type HarnessQueues } from '../queue/index.js'
import { countRecovery } from '../telemetry/index.js'
import { settleTurn } from '../turn/index.js'

export interface SweepDeps {
  openWork: OpenWork
  harnesses: ReadonlyMap<string, Harness>
  queuesOf(harness: Harness): HarnessQueues
  logFor(sessionId: string): SessionLog
  /**
   * Ends the parked calls of a turn that settled aborted or failed (session.abort again: it finishes a
   * cancel a crash cut short, and ends the calls a timeout left parked).
   */
  endParkedCalls(harness: Harness, sessionId: string, inputId: string): Promise<unknown>
  logger: Logger
}

/** Options of one sweeper pass (`host.sweep`). */
export interface SweepOptions {
  /** Items to look at per index in this pass. */
  limit?: number
  /** Only work older than this is considered (a prompt or a call between its log write and its enqueue is young). */
  graceMs?: number
  /** Only the open work of these shards (default all). */
  shards?: readonly number[]
}

/** One repair of a sweeper pass: the turn or call it moved on, and why (docs/recovery.md). */
export interface Repair {
  kind: 'turn' | 'call'
  sessionId: string
  id: string
  reason: string
}

const DEFAULT_GRACE_MS = 10_000
const CLAIM_MS = 30_000

/**
 * One recovery pass. It scans only the indexes of open work (open turns, open calls), never all
 * sessions, and repairs what a queue cannot: a turn past timeoutMs, a turn whose job vanished or
 * failed, a call whose job vanished, failed, or completed without a result, a parked call of a
 * turn that was aborted (the aborting process died before it cancelled the call) or failed. Each repair is claimed
 * (two sweepers at once repair each item once) and logged with its reason.
 */
export async function sweep(deps: SweepDeps, options: SweepOptions = {}): Promise<Repair[]> {
  const limit = options.limit ?? 1000
  const before = Date.now() - (options.graceMs ?? DEFAULT_GRACE_MS)
  const repairs: Repair[] = []
  for (const [index, repair] of [
    ['openTurns', repairTurn],
    ['openCalls', repairCall],
  ] as const) {
    for (const item of await deps.openWork.nextRound(index, before, limit, options.shards)) {
      const release = await deps.openWork.claim(item, CLAIM_MS)
      if (!release) continue
      try {
        const done = await repair(deps, item)
        if (done) repairs.push(done)
      } finally {
        await release()
      }
    }
  }
  for (const r of repairs) {
    await deps
      .logFor(r.sessionId)
      .stream.append([{ type: 'harness.recovery', reason: r.reason, ...(r.kind === 'turn' ? { inputId: r.id } : { toolCallId: r.id }) }])
    await deps.openWork.countRecovery(r.sessionId, r.reason)
    countRecovery(r.reason)
    deps.logger.warn({ sessionId: r.sessionId, [r.kind === 'turn' ? 'inputId' : 'toolCallId']: r.id, reason: r.reason }, 'sweeper repaired')
  }
  return repairs
}

async function repairTurn(deps: SweepDeps, item: OpenItem): Promise<Repair | null> {
  const { sessionId, id: inputId } = item
  const log = deps.logFor(sessionId)
  const input = await log.inputs.getInput(inputId)
  const harness = input && deps.harnesses.get(input.harness)
  if (!input || input.status === 'settled') {
    await deps.openWork.drop('openTurns', [item])
    return null
  }
  if (!harness) return null // another host's harness: its own sweepers repair it
  const repair = (reason: string): Repair => ({ kind: 'turn', sessionId, id: inputId, reason })
  const queues = deps.queuesOf(harness)
  const { timeoutMs } = harness.durability
  if (timeoutMs !== undefined && input.at + timeoutMs < Date.now()) {
    await settleTurn(log, queues, harness, {
      type: 'harness.input.settled',
      inputId,
      outcome: 'failed',
      error: { code: 'timeout', message: `Turn exceeded timeoutMs (${timeoutMs} ms).` },
    })
    await deps.endParkedCalls(harness, sessionId, inputId)
    return repair('turn past timeoutMs: settled as failed')
  }
  if (input.steerInto) {
    // it joined a running turn (busy 'steer'): it settles with that turn; a crash may have left it open
    const joined = await log.inputs.getSettled(input.steerInto)
    if (!joined) return null
    await settleTurn(log, queues, harness, { ...joined, inputId })
    return repair('input that joined a settled turn: settled with it')
  }
  const first = await log.inputs.firstInLine()
  if (first !== undefined && first !== inputId) return null // waits in line: enqueued when the turn before it settles
  const job = await inspectTurnJob(queues, sessionId, inputId)
  if (job.state === 'failed') {
    await job.retryFailed()
    return repair('turn job failed without settling: retried')
  }
  if (job.state !== 'missing' && job.state !== 'completed') return null
  await job.remove()
  await enqueueTurn(queues, harness, sessionId, inputId, input.priority)
  return repair(`turn job ${job.state === 'missing' ? 'vanished' : 'completed without settling'}: enqueued again`)
}

async function repairCall(deps: SweepDeps, item: OpenItem): Promise<Repair | null> {
  const { sessionId, id: toolCallId } = item
  const log = deps.logFor(sessionId)
  const call = await log.calls.getCall(toolCallId)
  if (!call || call.status === 'done') {
    await deps.openWork.drop('openCalls', [item])
    return null
  }
  const harness = call.owner && deps.harnesses.get(call.owner.harness)
  if (!harness) return null
  const repair = (reason: string): Repair => ({ kind: 'call', sessionId, id: toolCallId, reason })
  const turnId = call.owner?.inputId
  const outcome = turnId && call.status === 'parked' ? (await log.inputs.getSettled(turnId))?.outcome : undefined
  if (outcome === 'aborted' || outcome === 'failed') {
    await deps.endParkedCalls(harness, sessionId, turnId!)
    return (await log.calls.getCall(toolCallId))?.status === 'done' ? repair(`parked call of a turn that ${outcome}: cancelled`) : null
  }
  const queues = deps.queuesOf(harness)
  const job = await inspectCallJob(queues, sessionId, toolCallId)
  if (job.state === 'failed') {
    await job.retryFailed()
    return repair('call job failed without a result: retried')
  }
  if (job.state !== 'missing' && job.state !== 'completed') return null
  // parked without its job by design (a runTool call's event wait): its timer or its event enqueues it
  if (call.status === 'parked' && job.state === 'missing' && (await eventTimerOf(log.stream, toolCallId)) !== null) return null
  const inputId = call.owner!.inputId
  const logged = await log.findLoggedCall(toolCallId, inputId)
  await job.remove()
  // a call of a turn goes back under its turn when the turn still waits for it; else on its own
  const turn = inputId ? await inspectTurnJob(queues, sessionId, inputId) : undefined
  const parent = turn?.state === 'waiting-children' ? turn.asParent() : undefined
  await enqueueCall(
    queues,
    harness,
    sessionId,
    // as logged, so the job's data is the logged call's (its begin checks it)
    {
      toolCallId,
      name: call.name,
      input: logged?.input,
      ...(logged?.inputTooLarge === undefined ? {} : { inputTooLarge: logged.inputTooLarge }),
    },
    { ...(inputId ? { inputId } : {}), ...(parent ? { parent } : {}) },
  )
  return repair(`call job ${job.state === 'missing' ? 'vanished' : 'completed without a result'}: enqueued again`)
}
