import { convertSchemaToJsonSchema } from '@tanstack/ai'
import type { StandardSchemaV1 } from '@standard-schema/spec'
import { EventTimeoutError } from '../errors/index.js'
import { callWaitMember, EventWaits, type Fence, type SessionLog } from '../log/index.js'
import { validateNow } from './ask.js'
import type { WaitForEventOptions } from './context.js'
import { parseDuration } from './duration.js'
import { Park } from './park.js'
import type { WaitRecording } from './stepCore.js'

/** Longest event name and key: they are hashed into one key name, and shown in records and errors. */
const MAX_ADDRESS_LENGTH = 1_000

/** The event waits of one attempt (Redis), over the step core's recording of the wait (stepCore.ts). */
interface WaitDeps extends WaitRecording {
  log: SessionLog
  fence: Fence
  /** The harness whose tool waits: the sender finds the call's queue by it. */
  harness: string
}

function assertAddress(what: 'event' | 'key', value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ADDRESS_LENGTH)
    throw new TypeError(`step.waitForEvent needs an ${what}: a non-empty string of at most ${MAX_ADDRESS_LENGTH} characters.`)
}

/**
 * step.waitForEvent: the payload once it is stored (a run again returns it), else the event delivered
 * to this wait or a kept one its schema accepts (consumed by this wait, R20), else EventTimeoutError
 * past the timeout, else the call parks until the timeout or a sender's wake-up.
 */
export function createWaitForEvent({ log, fence, harness, recordWait, saveValue, park, ours }: WaitDeps) {
  return async function waitForEvent(options: WaitForEventOptions<StandardSchemaV1 | undefined>): Promise<unknown> {
    const { name, event, key, schema } = options
    assertAddress('event', event)
    assertAddress('key', key)
    const ms = parseDuration(options.timeout)
    // the payload once it is recorded, else the timeout, recorded once (a run again keeps it)
    const recorded = await recordWait(name, event, key, ms)
    if (recorded.found) return recorded.value
    const { until } = recorded
    const address = { event, key }
    const waits = new EventWaits(log.redis, log.prefix)
    const member = callWaitMember(log.sessionId, fence.toolCallId, name)
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
      const value = await saveValue(name, checked.value, `Event "${event}" payload (step "${name}")`, (copy) => ({
        type: 'harness.tool.event',
        toolCallId: fence.toolCallId,
        name,
        event,
        key,
        ...(copy === undefined ? {} : { payload: copy }),
      }))
      await ours(waits.done(address, member))
      return value
    }
  }
}
