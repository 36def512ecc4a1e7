/**
 * Thrown through the tool's code when a step must wait (sleep, ask, an event, or a step retry's long backoff). The queue layer turns it into a
 * delayed job; it is not an error and not a crash (R14). A tool that catches it is still parked: the
 * context remembers the park and every later step throws it again.
 */
export class Park extends Error {
  constructor(
    readonly kind: 'sleep' | 'ask' | 'agent' | 'retry' | 'event' | 'limit' | 'children',
    readonly until: number,
    readonly stepName: string,
    /** Whether the wake-up already came (an event delivered while the call was parking): re-checked after the job was delayed. */
    readonly woken?: () => Promise<boolean>,
  ) {
    super(`Tool call parked (${kind} "${stepName}") until ${new Date(until).toISOString()}`)
    this.name = 'Park'
  }
}
