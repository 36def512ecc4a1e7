import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import { InvalidEventPayloadError, InvalidIdError } from '../errors/index.js'
import type { Logger } from '../logger.js'
import { assertEventAddressPart, isSafeId, type EventWaiter, type EventWaits, type RedisClient, type SessionLog } from '../log/index.js'
import { wakeCallByName, wakeEventWait, type HarnessQueues } from '../queue/index.js'
import { DEFAULT_MAX_VALUE_BYTES, encodeChecked, toJsonCopy } from '../tool/index.js'

/** A machine event for `host.sendEvent`: its name, its correlation key, its payload and an optional id that makes a resend a no-op. */
export interface SendEventOptions {
  /** The event's name, e.g. `payment.settled`. */
  event: string
  /** The correlation key a wait names, e.g. the order id. */
  key: string
  /** JSON; checked against the schema of every call waiting on (event, key). */
  payload?: unknown
  /** De-duplicates: a second send with the same id (per event and key, within the retention) does nothing. */
  id?: string
  /**
   * Sends it to one session: only that session's waits with `scope: 'session'` take it (kept for the
   * first of them when none waits yet). Without it, the event is for the waits without a scope.
   */
  sessionId?: string
}

/** What `host.sendEvent` did: woke the calls (and cancelOn turns) waiting on the event, kept it for a later wait, or nothing (a seen id). */
export interface SendEventResult {
  status: 'delivered' | 'stored' | 'duplicate'
  /** The waiting calls woken (on a duplicate: the ones woken again that had not taken the event yet). */
  calls: number
  /** The turns cancelled by a cancelOn of their harness. */
  turns: number
}

/** The machine-event method of a host (createHarnessHost). */
export interface HostEvents {
  /**
   * Sends a machine event from any process: wakes every call waiting on (event, key) in
   * `step.waitForEvent` (and cancels the turns a harness's `cancelOn` names), or with `sessionId` the
   * session-scoped waits of that one session; with none waiting it is
   * kept for `events.retention` for the first wait that asks (R20); a payload a waiting call's
   * schema refuses throws InvalidEventPayloadError and wakes nothing; a seen `id` does nothing.
   */
  sendEvent(options: SendEventOptions): Promise<SendEventResult>
}

export interface SendEventDeps {
  waits: EventWaits
  queuesByName(name: string): HarnessQueues | undefined
  /** A session's log: a call parked without its job gets one from its logged call. */
  logFor(sessionId: string): SessionLog
  /** Where the queues of a harness this host does not run are: their calls are woken there by name. */
  queues: { connection: RedisClient; prefix: string; shards: number }
  /** Aborts a turn whose harness cancels on this event. */
  abortTurn(harness: string, sessionId: string, inputId: string, reason: string): Promise<void>
  logger: Logger
}

/** Rounds of "a new waiter came in while we checked its schema": each is one script; more than a few means a storm of new waits. */
const MAX_CHECK_ROUNDS = 10

/**
 * Delivers one event: the payload is checked against the JSON Schema of every call waiting on
 * (event, key) first (a refusal throws InvalidEventPayloadError: nothing stored, nothing woken), then
 * one script on the event's hash delivers it to them all or keeps it for the first wait (R20), and
 * each waiting call's job is promoted (or enqueued, for a call parked without its job). A crash before a promote is repaired by a resend with the
 * same id (its duplicate names the calls that have not taken it yet) or by the call's own timeout.
 */
export async function sendEvent(deps: SendEventDeps, options: SendEventOptions): Promise<SendEventResult> {
  const { event, key, id, sessionId } = options
  assertEventAddressPart('host.sendEvent', 'event name', event)
  assertEventAddressPart('host.sendEvent', 'key', key)
  if (id !== undefined && (typeof id !== 'string' || !isSafeId(id))) throw new InvalidIdError('event id', id)
  if (sessionId !== undefined && (typeof sessionId !== 'string' || !isSafeId(sessionId))) throw new InvalidIdError('session id', sessionId)
  const what = `Payload of event "${event}"`
  const copy = toJsonCopy(options.payload ?? null, what)
  // a JSON copy always encodes (null for an undefined payload)
  const payload = encodeChecked(copy, what, DEFAULT_MAX_VALUE_BYTES) ?? 'null'
  const address = { event, key, ...(sessionId === undefined ? {} : { sessionId }) }
  const uid = randomBytes(12).toString('base64url')
  const checked: string[] = []
  for (let round = 0; round < MAX_CHECK_ROUNDS; round++) {
    const delivery = await deps.waits.deliver(address, { uid, ...(id ? { id } : {}), payload }, checked)
    if (delivery.status === 'stored') return { status: 'stored', calls: 0, turns: 0 }
    if (delivery.status !== 'check') return { status: delivery.status, ...(await wake(deps, delivery.waiters, event)) }
    for (const { member, schema } of delivery.schemas) {
      if (schema !== undefined) {
        const parsed = z.fromJSONSchema(schema as never).safeParse(copy)
        if (!parsed.success) throw new InvalidEventPayloadError(event, key, z.prettifyError(parsed.error).replace(/\n\s*/g, ' '))
      }
      checked.push(member)
    }
  }
  throw new Error(`host.sendEvent: the waiters of event "${event}" kept changing over ${MAX_CHECK_ROUNDS} rounds; send it again.`)
}

async function wake(deps: SendEventDeps, waiters: EventWaiter[], event: string): Promise<{ calls: number; turns: number }> {
  let calls = 0
  let turns = 0
  await Promise.all(
    waiters.map(async (w) => {
      if (w.kind === 'turn') {
        await deps.abortTurn(w.harness, w.sessionId, w.id, `Cancelled by event "${event}" (cancelOn).`)
        return void turns++
      }
      const queues = deps.queuesByName(w.harness)
      const log = deps.logFor(w.sessionId)
      if (queues) await wakeEventWait(queues.of(w.sessionId).tools, log, w.id)
      else {
        // a harness this host does not run (a webhook server, the CLI): its tool queue by name
        const { connection, prefix, shards } = deps.queues
        await wakeCallByName(connection, prefix, shards, w.harness, log, w.id)
      }
      calls++
    }),
  )
  return { calls, turns }
}
