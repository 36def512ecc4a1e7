import type { Harness } from '../harness/defineHarness.js'
import type { HarnessHost } from '../harness/host.js'

/** Who sends a request, as `authorize` returns it: an object your `canAccess` understands (`{ id: 'u1' }`). */
export type Principal = object

/**
 * Decides who sends a request; runs first on every request. Only an object is a principal: `null`,
 * `undefined`, `false`, `0`, `''`, `true`, a string, a number or an array refuses the request with 401,
 * so `(req) => req.headers.get('authorization') === expected` refuses rather than admits.
 */
export type Authorize<P extends Principal = Principal> = (
  request: Request,
) => P | null | undefined | false | Promise<P | null | undefined | false>

/**
 * `authorize`'s answer as a principal, or undefined for a refusal: anything but a non-array object
 * refuses, so a boolean or a string check cannot admit everyone by accident.
 */
export function acceptPrincipal<P extends Principal>(answer: unknown): P | undefined {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return undefined
  return answer as P
}

/** May this principal use this thread (session)? `false` refuses the request with 403. */
export type CanAccess<P extends Principal = Principal> = (principal: P, threadId: string) => boolean | Promise<boolean>

/** Options of `createHarnessHandler`: the host and harness it serves, who may call it (`authorize`) and which threads (`canAccess`). */
export interface HarnessHandlerOptions<P extends Principal = Principal> {
  host: HarnessHost
  harness: Harness
  /** Required: no endpoint is open by accident. */
  authorize: Authorize<P>
  /** Default: every authorized principal may use every thread. */
  canAccess?: CanAccess<P>
  /**
   * May this principal send this machine event (`POST control { op: 'event' }`)? An event wakes the
   * calls of every thread waiting on it, so without this option every event is refused with 403.
   */
  canSendEvent?: (principal: P, event: { event: string; key: string }) => boolean | Promise<boolean>
  /** A comment line on every open SSE stream this often, so proxies keep it open (default 15 000 ms). */
  heartbeatMs?: number
}
