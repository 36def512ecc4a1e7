import { RESERVED_PREFIX } from './reserved.js'

/**
 * A call's step.waitForEvent stores its own step beside the payload's step `name`: `harness.wait:<name>`
 * → `{ until, ev }` (when it times out, stored once; `ev`: the id of the address it registered under,
 * log/eventAddress.ts; a wait stored by an older version has no `ev`). A wait step whose payload step
 * is not stored is an open wait: the call waits on it, or timed out on it.
 */
export const WAIT_STEP_PREFIX = `${RESERVED_PREFIX}wait:`

/** The value of a wait's own step. */
export interface WaitStepValue {
  until: number
  /** The id of the address the wait registered under; absent when an older version stored it. */
  ev?: string
}

/** A wait's stored step value read back (anything else reads as a wait with no address id, timed out). */
export function waitStepValueOf(value: unknown): WaitStepValue {
  if (typeof value !== 'object' || value === null) return { until: 0 }
  const until = 'until' in value && typeof value.until === 'number' ? value.until : 0
  return 'ev' in value && typeof value.ev === 'string' ? { until, ev: value.ev } : { until }
}
