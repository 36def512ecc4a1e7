import { Job } from 'bullmq'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { indexKeys, type SessionLog } from '../log/index.js'
import { enqueueTurn, toolJob, toolJobId, turnJobId, type HarnessQueues, type RuntimeHarness } from '../queue/index.js'

export interface SweepDeps {
  redis: Redis
  prefix: string
  harnesses: ReadonlyMap<string, RuntimeHarness>
  queuesOf(harness: RuntimeHarness): HarnessQueues
  logFor(sessionId: string): SessionLog
  logger: Logger
}

export interface SweepOptions {
  /** Items to look at per index in this pass. */
  limit?: number
  /** Only work older than this is considered (a prompt or a call between its log write and its enqueue is young). */
  graceMs?: number
}

export interface Repair {
  kind: 'turn' | 'call'
  sessionId: string
  id: string
  reason: string
}

export const DEFAULT_GRACE_MS = 10_000

/**
 * One recovery pass. It scans only the indexes of open work (open turns, open calls), never all
 * sessions, and repairs what a queue cannot: a turn past timeoutMs, a turn whose job vanished or
 * failed, a call whose job vanished, failed, or completed without a result. Each repair is claimed
 * with a lock (two sweepers at once repair each item once) and logged with its reason.
 */
export async function sweep(deps: SweepDeps, options: SweepOptions = {}): Promise<Repair[]> {
  const limit = options.limit ?? 1000
  const before = Date.now() - (options.graceMs ?? DEFAULT_GRACE_MS)
  const idx = indexKeys(deps.prefix)
  const repairs: Repair[] = []
  const turns = await deps.redis.zrangebyscore(idx.openTurns, '-inf', before, 'LIMIT', 0, limit)
  for (const member of turns) {
    const repair = await claimed(deps, member, () => repairTurn(deps, member))
    if (repair) repairs.push(repair)
  }
  const calls = await deps.redis.zrangebyscore(idx.openCalls, '-inf', before, 'LIMIT', 0, limit)
  for (const member of calls) {
    const repair = await claimed(deps, member, () => repairCall(deps, member))
    if (repair) repairs.push(repair)
  }
  for (const r of repairs) {
    await deps.logFor(r.sessionId).append([{ type: 'harness.recovery', reason: r.reason, ...(r.kind === 'turn' ? { inputId: r.id } : { toolCallId: r.id }) }])
    deps.logger.warn({ sessionId: r.sessionId, [r.kind === 'turn' ? 'inputId' : 'toolCallId']: r.id, reason: r.reason }, 'sweeper repaired')
  }
  return repairs
}

async function claimed(deps: SweepDeps, member: string, repair: () => Promise<Repair | null>): Promise<Repair | null> {
  const lock = `${deps.prefix}:sweep-lock:${member}`
  if ((await deps.redis.set(lock, '1', 'PX', 30_000, 'NX')) !== 'OK') return null
  try {
    return await repair()
  } finally {
    await deps.redis.del(lock)
  }
}

function split(member: string): [string, string] {
  const bar = member.indexOf('|')
  return [member.slice(0, bar), member.slice(bar + 1)]
}

async function repairTurn(deps: SweepDeps, member: string): Promise<Repair | null> {
  const [sessionId, inputId] = split(member)
  const log = deps.logFor(sessionId)
  const input = await log.getInput(inputId)
  const harness = input && deps.harnesses.get(input.harness)
  if (!input || input.status === 'settled') {
    await deps.redis.zrem(indexKeys(deps.prefix).openTurns, member)
    return null
  }
  if (!harness) return null // another host's harness: its own sweepers repair it
  const repair = (reason: string): Repair => ({ kind: 'turn', sessionId, id: inputId, reason })
  const { timeoutMs } = harness.durability
  if (timeoutMs !== undefined && input.at + timeoutMs < Date.now()) {
    await log.settleInput({ type: 'harness.input.settled', inputId, outcome: 'failed', error: { code: 'timeout', message: `Turn exceeded timeoutMs (${timeoutMs} ms).` } })
    return repair('turn past timeoutMs: settled as failed')
  }
  const queues = deps.queuesOf(harness)
  const job = await Job.fromId(queues.turns, turnJobId(sessionId, inputId))
  const state = job ? await job.getState() : 'missing'
  if (state === 'failed') {
    await job!.retry('failed')
    return repair('turn job failed without settling: retried')
  }
  if (state === 'missing' || state === 'completed') {
    if (job) await job.remove()
    await enqueueTurn(queues.turns, harness, sessionId, inputId)
    return repair(`turn job ${state === 'missing' ? 'vanished' : 'completed without settling'}: enqueued again`)
  }
  return null
}

async function repairCall(deps: SweepDeps, member: string): Promise<Repair | null> {
  const [sessionId, toolCallId] = split(member)
  const log = deps.logFor(sessionId)
  const call = await log.getCall(toolCallId)
  if (!call || call.status === 'done') {
    await deps.redis.zrem(indexKeys(deps.prefix).openCalls, member)
    return null
  }
  const harness = call.owner && deps.harnesses.get(call.owner.harness)
  if (!harness) return null
  const queues = deps.queuesOf(harness)
  const job = await Job.fromId(queues.tools, toolJobId(sessionId, toolCallId))
  const state = job ? await job.getState() : 'missing'
  const repair = (reason: string): Repair => ({ kind: 'call', sessionId, id: toolCallId, reason })
  if (state === 'failed') {
    await job!.retry('failed')
    return repair('call job failed without a result: retried')
  }
  if (state !== 'missing' && state !== 'completed') return null
  const inputId = call.owner!.inputId
  const input = await log.findCallInput(toolCallId, inputId)
  if (job) await job.remove()
  // a call of a turn goes back under its turn when the turn still waits for it; else on its own
  const turn = inputId ? await Job.fromId(queues.turns, turnJobId(sessionId, inputId)) : undefined
  const parent = turn && (await turn.getState()) === 'waiting-children' ? { id: turn.id!, queue: turn.queueQualifiedName } : undefined
  const again = toolJob(harness, sessionId, { toolCallId, name: call.name, input }, { ...(inputId ? { inputId } : {}), ...(parent ? { parent } : {}) })
  await queues.tools.add(again.name, again.data, again.opts)
  return repair(`call job ${state === 'missing' ? 'vanished' : 'completed without a result'}: enqueued again`)
}
