import { convertSchemaToJsonSchema } from '@tanstack/ai'
import type { StandardSchemaV1 } from '@standard-schema/spec'
import { EventTimeoutError } from '../errors/index.js'
import {
  assertEventAddressPart,
  callWaitMember,
  eventAddressId,
  EventWaits,
  WAIT_STEP_PREFIX,
  type EventAddress,
  type LogRecord,
  type StepLookup,
  type WaitStepValue,
  waitStepValueOf,
} from '../log/index.js'
import { validateNow } from './ask.js'
import type { WaitForEventOptions } from './context.js'
import { parseDuration } from './duration.js'
import { takeMovedPayload, type MovedWaitDeps } from './movedWait.js'
import { Park } from './park.js'

interface WaitDeps extends Omit<MovedWaitDeps, 'waits'> {
  /** The harness whose tool waits: the sender finds the call's queue by it. */
  harness: string
  /** True on a fresh first attempt: no wait of the call can be stored yet, none can have moved. */
  fresh: boolean
  lookup(name: string): Promise<StepLookup>
  /** Stores a step of the harness's own with its record; resolves with the value stored first (a lost race keeps the other). */
  storeStep(name: string, value: unknown, record: LogRecord): Promise<unknown>
  park(p: Park): never
}

const WHERE = 'step.waitForEvent'

function scopeOf(scope: unknown): 'session' | undefined {
  if (scope === undefined || scope === 'global') return undefined
  if (scope === 'session') return 'session'
  throw new TypeError(`step.waitForEvent: scope must be 'session' or 'global' (the default), got ${JSON.stringify(scope)}.`)
}

/**
 * step.waitForEvent: the payload once it is stored (a run again returns it), else, on a woken call
 * whose code now waits elsewhere, the payload delivered to the wait it registered (movedWait.ts),
 * else the event delivered to this wait or a kept one its schema accepts (consumed by this wait,
 * R20), else EventTimeoutError past the timeout, else the call parks until the timeout or a wake-up.
 */
export function createWaitForEvent(deps: WaitDeps) {
  const { log, fence, harness, lookup, storeStep, saveValue, park, ours } = deps
  // once this attempt met the wait its call was parked on (or scanned for the ones its code no longer has), none can have moved
  let settledMoves = deps.fresh
  return async function waitForEvent(options: WaitForEventOptions<StandardSchemaV1 | undefined>): Promise<unknown> {
    const { name, event, key, schema } = options
    assertEventAddressPart(WHERE, 'event name', event)
    assertEventAddressPart(WHERE, 'key', key)
    const scope = scopeOf(options.scope)
    const ms = parseDuration(options.timeout)
    const stored = await lookup(name)
    if (stored.found) return stored.value
    const address: EventAddress = { event, key, ...(scope ? { sessionId: log.sessionId } : {}) }
    const addressId = eventAddressId(address)
    const waits = new EventWaits(log.redis, log.prefix)
    const member = callWaitMember(log.sessionId, fence.toolCallId, name)
    const eventRecord = (copy: unknown): LogRecord => ({
      type: 'harness.tool.event',
      toolCallId: fence.toolCallId,
      name,
      event,
      key,
      ...(scope ? { scope } : {}),
      ...(copy === undefined ? {} : { payload: copy }),
    })
    const waitStep = `${WAIT_STEP_PREFIX}${name}`
    const found = await lookup(waitStep)
    const registered = found.found ? waitStepValueOf(found.value) : undefined
    /** Stores the new wait's timeout and address id, once (a run again keeps them), with its harness.tool.wait record. */
    const register = async () => {
      const at = Date.now() + ms
      const record: LogRecord = {
        type: 'harness.tool.wait',
        toolCallId: fence.toolCallId,
        name,
        event,
        key,
        until: at,
        ...(scope ? { scope } : {}),
      }
      return waitStepValueOf(await storeStep(waitStep, { until: at, ev: addressId } satisfies WaitStepValue, record))
    }
    if (!settledMoves) {
      // a wait not past its timeout is the one the call parked on (a call has one); a new one scans for the waits its code dropped
      settledMoves = !registered || Date.now() < registered.until
      // before a new wait is stored: a crash while its payload moves finds the old wait again
      const moved = await takeMovedPayload({ ...deps, waits }, { name, addressId, registered, schema, record: eventRecord })
      if (moved.found) return moved.value
    }
    const { until } = registered ?? (await register())
    // the sender checks a payload against this before it wakes the call (it has no Standard Schema)
    const jsonSchema = schema ? convertSchemaToJsonSchema(schema) : undefined
    const verdicts = new Map<string, boolean>()
    for (;;) {
      const reply = await ours(waits.await(address, member, { until, harness, schema: jsonSchema }, verdicts))
      if (reply.status === 'check') {
        for (const kept of reply.events) verdicts.set(kept.uid, (await validateNow(schema, kept.payload)).ok)
        continue
      }
      if (reply.status === 'timeout') throw new EventTimeoutError(event, key, new Date(until).toISOString())
      if (reply.status === 'waiting') return park(new Park('event', until, name, () => waits.delivered(address, member)))
      const checked = await validateNow(schema, reply.payload)
      if (!checked.ok) {
        // passed the JSON Schema the sender checked, not the schema itself (a refinement): it wakes nothing, the wait goes on
        await ours(waits.done(address, member))
        continue
      }
      const value = await saveValue(name, checked.value, `Event "${event}" payload (step "${name}")`, eventRecord)
      await ours(waits.done(address, member))
      return value
    }
  }
}
