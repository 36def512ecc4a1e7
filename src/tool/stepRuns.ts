// Who is told each time a step's fn starts in this process: the testing kit counts them (env.steps);
// in production nobody is, and the check is one size test.
const observers = new Set<(idempotencyKey: string) => void>()

/** Calls `observer` with the step's idempotency key (`<session>:<call>:<step>`) each time a step's fn starts here; returns the unsubscribe. */
export function observeStepRuns(observer: (idempotencyKey: string) => void): () => void {
  observers.add(observer)
  return () => observers.delete(observer)
}

export function noteStepRun(idempotencyKey: string): void {
  if (observers.size > 0) for (const observe of observers) observe(idempotencyKey)
}
