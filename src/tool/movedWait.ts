import type { StandardSchemaV1 } from '@standard-schema/spec'
import {
  callWaitMember,
  openWaitsOf,
  waitAddressId,
  type EventWaits,
  type Fence,
  type LogRecord,
  type OpenWait,
  type SessionLog,
  type WaitStepValue,
} from '../log/index.js'
import { validateNow } from './ask.js'

export interface MovedWaitDeps {
  log: SessionLog
  fence: Fence
  waits: EventWaits
  /** Whether this attempt already reached the step (its wait, if it is one, was met, not moved). */
  met(name: string): boolean
  saveValue(name: string, value: unknown, what: string, record: (copy: unknown) => LogRecord): Promise<unknown>
  ours<T>(write: Promise<T>): Promise<T>
}

/** The wait the code registers now. */
interface NewWait {
  name: string
  addressId: string
  /** Its stored wait step (the address it registered under), or undefined for a wait the call has not registered yet. */
  registered: WaitStepValue | undefined
  schema: StandardSchemaV1 | undefined
  record: (copy: unknown) => LogRecord
}

export type MovedPayload = { found: true; value: unknown } | { found: false }

/** The waits of the call that `wait` stands in for: its own old address, or the open waits of other names. */
async function movedFrom(d: MovedWaitDeps, wait: NewWait): Promise<OpenWait[]> {
  const { log, fence } = d
  if (wait.registered) {
    const before = await waitAddressId(log, fence.toolCallId, wait.name, wait.registered)
    return before !== undefined && before !== wait.addressId ? [{ name: wait.name, addressId: before }] : []
  }
  return openWaitsOf(log, fence.toolCallId, (name) => name === wait.name || d.met(name))
}

/**
 * A woken call whose code (a deploy later) registers another wait than the one it parked on (another
 * event, key or step name) takes the payload delivered to its old address, so a delivered event is
 * never lost: it is checked by the new wait's schema and stored as the new wait's step, then the old
 * entries go. An old wait nothing was delivered to leaves its address (a later send there is kept,
 * not answered 'delivered'). A payload the new schema refuses is dropped, as a refused delivery is.
 * Called at an attempt's first wait (before a new wait is stored, so a crash while a payload moves
 * finds the old wait again); after the wait the call parked on, no wait of the attempt can have moved.
 */
export async function takeMovedPayload(d: MovedWaitDeps, wait: NewWait): Promise<MovedPayload> {
  const { log, fence, waits, ours } = d
  for (const old of await ours(movedFrom(d, wait))) {
    const member = callWaitMember(log.sessionId, fence.toolCallId, old.name)
    const left = await ours(waits.leave(old.addressId, member))
    if (left.status !== 'event') continue
    const checked = await validateNow(wait.schema, left.payload)
    if (!checked.ok) {
      await ours(waits.done(old.addressId, member))
      continue
    }
    const value = await d.saveValue(
      wait.name,
      checked.value,
      `Event payload (step "${wait.name}", delivered to step "${old.name}")`,
      wait.record,
    )
    await ours(waits.done(old.addressId, member))
    return { found: true, value }
  }
  return { found: false }
}
