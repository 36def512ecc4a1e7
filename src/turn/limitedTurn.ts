import { DelayedError, type Job } from 'bullmq'
import type { Logger } from 'pino'
import type { Harness } from '../core/index.js'
import { takeSlot, type HeldSlot } from '../limits/slot.js'
import { contextOf, type InputState } from '../log/index.js'
import { wakeTurn, type HarnessQueues, type TurnJobData } from '../queue/index.js'

/**
 * Takes the slot of the harness's turn limit (`limits.turns`, R17) before a run of the turn job does
 * its work (a model call, enqueueing a batch): the slot is given back when the run ends (it settles,
 * waits for its calls as a parent, or parks). A turn that must wait is delayed, holding no worker
 * slot, until its limit hands it a slot (the releaser promotes it) or its re-check time. The key
 * function sees `{ text }` of the turn's input and the prompt's context. A LimitKeyError is thrown.
 */
export async function takeTurnSlot(
  job: Job<TurnJobData>,
  token: string | undefined,
  harness: Harness,
  queues: HarnessQueues,
  input: InputState,
  logger: Logger,
): Promise<HeldSlot | undefined> {
  const limit = harness.limits?.turns
  if (!limit) return undefined
  const { sessionId, inputId } = job.data
  const place = { redis: queues.connection, prefix: queues.prefix, harness: harness.name, lockMs: harness.durability.lockMs }
  const subject = {
    of: 'turn' as const,
    member: `${sessionId}|${inputId}`,
    sessionId,
    input: { text: input.text },
    context: contextOf(input),
  }
  const slot = await takeSlot(place, limit, subject, (member) => {
    const at = member.indexOf('|')
    return wakeTurn(queues, harness, member.slice(0, at), member.slice(at + 1))
  })
  if (slot.kind === 'held') {
    logger.debug({ limit: limit.scope, key: slot.key, waitedMs: slot.waitedMs, startedAt: slot.startedAt }, 'limit slot taken')
    return slot
  }
  logger.debug({ limit: limit.scope, reason: slot.reason, until: slot.until }, 'waiting for limit')
  await job.moveToDelayed(slot.until, token)
  // a hand-off that came before our moveToDelayed promoted nothing: look again
  if (await slot.handed()) await job.promote().catch(() => {})
  throw new DelayedError()
}
