import { LimitKeyError } from '../errors/index.js'
import type { Harness, ResolvedLimit } from '../core/index.js'
import type { LineLogger } from '../logger.js'
import { takeSlot, type HeldSlot } from '../limits/slot.js'
import type { ToolErrorPayload } from '../log/index.js'
import { wakeCall, type HarnessQueues } from '../queue/index.js'
import { Park, toToolError } from '../tool/index.js'

/** What a call's limit says for this attempt: none, a slot it holds, a wait (a park), or a bad key (a tool error). */
export type CallSlot = undefined | { held: HeldSlot } | { park: Park; handed: () => Promise<boolean> } | { error: ToolErrorPayload }

/**
 * Takes the slot of the call's tool limit (`limits.tools[name]`, R17) before the tool runs. A call
 * that must wait parks (kind `limit`) like a sleep: it holds no worker slot, and a release that
 * hands it a slot promotes its job. Every attempt takes its own slot: one that parks (sleep, ask,
 * approval, a retry's backoff) gives it back, and takes one again when it wakes.
 */
export function takeCallSlot(
  harness: Harness,
  queues: HarnessQueues,
  call: { sessionId: string; toolCallId: string; name: string; input: unknown },
  context: unknown,
  logger: LineLogger,
): Promise<CallSlot> | undefined {
  const limit = harness.limits?.tools.get(call.name)
  // no limit, no promise: most tools have none
  return limit ? takeLimitSlot(harness, queues, call, context, logger, limit) : undefined
}

async function takeLimitSlot(
  harness: Harness,
  queues: HarnessQueues,
  call: { sessionId: string; toolCallId: string; name: string; input: unknown },
  context: unknown,
  logger: LineLogger,
  limit: ResolvedLimit,
): Promise<CallSlot> {
  const place = { redis: queues.connection, prefix: queues.prefix, harness: harness.name, lockMs: harness.durability.lockMs }
  const subject = {
    of: 'tool call' as const,
    member: `${call.sessionId}|${call.toolCallId}`,
    sessionId: call.sessionId,
    input: call.input,
    context,
  }
  try {
    const slot = await takeSlot(place, limit, subject, (member) => {
      const at = member.indexOf('|')
      return wakeCall(queues, member.slice(0, at), member.slice(at + 1))
    })
    if (slot.kind === 'held') {
      logger.debug({ limit: limit.scope, key: slot.key, waitedMs: slot.waitedMs, startedAt: slot.startedAt }, 'limit slot taken')
      return { held: slot }
    }
    logger.debug({ limit: limit.scope, reason: slot.reason, until: slot.until }, 'waiting for limit')
    return { park: new Park('limit', slot.until, limit.scope), handed: slot.handed }
  } catch (error) {
    if (error instanceof LimitKeyError) return { error: toToolError(error) }
    throw error
  }
}

/**
 * Gives the attempt's slot back once its tool's code has ended (R17): at once, unless the attempt
 * ended before its tool did (its turn aborted, its time limit): then when that code settles, or one
 * tool timeout later, when it is presumed stuck (`running`, from bounded.ts). Not awaited: a lost
 * release costs the slot until its lease expires (one lock duration), never more.
 */
export function releaseCallSlot(held: HeldSlot, running: Promise<boolean> | undefined, logger: LineLogger): void {
  const release = () =>
    void held.release().catch((err: unknown) => logger.warn({ err }, 'limit slot release failed; it frees itself when its lease expires'))
  if (!running) return release()
  logger.debug({ key: held.key }, 'the attempt ended before its tool did: its limit slot is held until the tool code ends')
  void running.then((settled) => {
    if (!settled)
      logger.warn({ key: held.key }, 'tool code still runs one tool timeout after its attempt ended; its limit slot is given back')
    release()
  })
}
