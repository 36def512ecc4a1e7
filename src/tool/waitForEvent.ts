import { convertSchemaToJsonSchema } from '@tanstack/ai'
import type { StandardSchemaV1 } from '@standard-schema/spec'
import { EventTimeoutError } from '../errors/index.js'
import {
  assertEventAddressPart,
  callWaitMember,
  eventAddressId,
  EventWaits,
  type EventAddress,
  type Fence,
  type LogRecord,
  type SessionLog,
} from '../log/index.js'
import { validateNow } from './ask.js'
import type { WaitForEventOptions } from './context.js'
import { parseDuration } from './duration.js'
import { takeMovedPayload } from './movedWait.js'
import { Park } from './park.js'
import type { TakeOver, WaitRecording } from './stepCore.js'

/** The event waits of one attempt (Redis), over the step core's recording of the wait (stepCore.ts). */
interface WaitDeps extends WaitRecording {
  log: SessionLog
  fence: Fence
  /** The harness whose tool waits: the sender finds the call's queue by it. */
  harness: string
  /** True on a fresh first attempt: no wait of the call can be stored yet, none can have moved. */
  fresh: boolean
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
  const { log, fence, harness, recordWait, saveValue, park, ours } = deps
  // once this attempt met the wait its call was parked on (or scanned for the ones its code no longer has), none can have moved
  let settledMoves = deps.fresh
  return async function waitForEvent(options: WaitForEventOptions<StandardSchemaV1 | undefined>): Promise<unknown> {
    const { name, event, key, schema } = options
    assertEventAddressPart(WHERE, 'event name', event)
    assertEventAddressPart(WHERE, 'key', key)
    const scope = scopeOf(options.scope)
    const ms = parseDuration(options.timeout)
    const address: EventAddress = { event, key, ...(scope ? { sessionId: log.sessionId } : {}) }
    const addressId = eventAddressId(address)
    const waits = new EventWaits(log.stream.redis, log.stream.prefix, undefined, log.stream.codec)
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
    const takeOver: TakeOver | undefined = settledMoves
      ? undefined
      : async (registered) => {
          if (settledMoves) return { found: false }
          // a wait not past its timeout is the one the call parked on (a call has one); a new one scans for the waits its code dropped
          settledMoves = !registered || Date.now() < registered.until
          return takeMovedPayload({ ...deps, waits }, { name, addressId, registered, schema, record: eventRecord })
        }
    // the payload once it is recorded, else one delivered to the wait this one stands in for, else the timeout, recorded once
    const recorded = await recordWait({ name, event, key, scope, addressId, timeoutMs: ms }, takeOver)
    if (recorded.found) return recorded.value
    const { until } = recorded
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
