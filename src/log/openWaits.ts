import { StorageError } from '../errors/index.js'
import { eventAddressId } from './eventAddress.js'
import { WAIT_STEP_PREFIX, waitStepValueOf, type WaitStepValue } from '../core/index.js'
import { hasType } from './records.js'
import type { SessionLog } from './sessionLog.js'
import { decodeValue } from './stepValues.js'
import { stepField } from './keys.js'

// the wait step's stored shape is the step core's too (tool/stepCore.ts records it): it lives in core/
export { WAIT_STEP_PREFIX, waitStepValueOf, type WaitStepValue }

/** An open wait of a call: its step name and the id of the address it registered under. */
export interface OpenWait {
  name: string
  addressId: string
}

const GLOB = /[*?[\]\\]/g

async function read<T>(log: SessionLog, operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw new StorageError(operation, log.sessionId, error)
  }
}

/**
 * The address id a wait registered under: its stored `ev`, else (a wait an older version stored) the
 * address of its `harness.tool.wait` record, read from the log (rare: once for each such wait).
 */
export async function waitAddressId(log: SessionLog, toolCallId: string, name: string, value: WaitStepValue): Promise<string | undefined> {
  if (typeof value.ev === 'string') return value.ev
  const waits = await log.stream.read({ types: ['harness.tool.wait'] })
  for (const { record } of waits.reverse())
    if (hasType(record, 'harness.tool.wait') && record.toolCallId === toolCallId && record.name === name)
      return eventAddressId({ event: record.event, key: record.key, ...(record.scope ? { sessionId: log.sessionId } : {}) })
  return undefined
}

/**
 * The open waits of a call (their payload step not stored), but the names `skip` holds: what a woken
 * call whose code registers another wait leaves (tool/movedWait.ts). One HSCAN of the session's steps
 * hash (its fields of this call's wait steps) and one HMGET: only on that path, never per step.
 */
export async function openWaitsOf(log: SessionLog, toolCallId: string, skip: (name: string) => boolean): Promise<OpenWait[]> {
  const prefix = stepField(toolCallId, WAIT_STEP_PREFIX)
  const found = new Map<string, WaitStepValue>()
  let cursor = '0'
  do {
    const [next, page] = await read(log, 'openWaits', () =>
      log.stream.redis.hscan(log.stream.keys.steps, cursor, 'MATCH', `${prefix.replace(GLOB, '\\$&')}*`, 'COUNT', 500),
    )
    cursor = next
    for (let i = 0; i + 1 < page.length; i += 2) {
      const name = page[i]!.slice(prefix.length)
      if (!skip(name)) found.set(name, waitStepValueOf(decodeValue(page[i + 1]!)))
    }
  } while (cursor !== '0')
  if (found.size === 0) return []
  const names = [...found.keys()]
  const payloads = await read(log, 'openWaits', () =>
    log.stream.redis.hmget(log.stream.keys.steps, ...names.map((n) => stepField(toolCallId, n))),
  )
  const open: OpenWait[] = []
  for (const [i, name] of names.entries()) {
    if (payloads[i] !== null) continue
    const addressId = await waitAddressId(log, toolCallId, name, found.get(name)!)
    if (addressId) open.push({ name, addressId })
  }
  return open
}
