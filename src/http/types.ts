import type { Harness } from '../harness/defineHarness.js'
import type { HarnessHost } from '../harness/host.js'

/** Who sends a request, as `authorize` returns it: any value your `canAccess` understands. */
export type Principal = NonNullable<unknown>

/** Decides who sends a request; `null` refuses it with 401. Runs first on every request. */
export type Authorize<P extends Principal = Principal> = (request: Request) => P | null | undefined | Promise<P | null | undefined>

/** May this principal use this thread (session)? `false` refuses the request with 403. */
export type CanAccess<P extends Principal = Principal> = (principal: P, threadId: string) => boolean | Promise<boolean>

export interface HarnessHandlerOptions<P extends Principal = Principal> {
  host: HarnessHost
  harness: Harness
  /** Required: no endpoint is open by accident. */
  authorize: Authorize<P>
  /** Default: every authorized principal may use every thread. */
  canAccess?: CanAccess<P>
  /** A comment line on every open SSE stream this often, so proxies keep it open (default 15 000 ms). */
  heartbeatMs?: number
}
