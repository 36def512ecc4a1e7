// Small helpers shared by the integration tests.
import type { LogEntry } from '../../src/entries/ops.js'
import { patient } from './patience.js'

/** A prompt for the shop fixture's scripted model: one batch of these calls. */
export const batch = (calls: Array<{ name: string; input: unknown }>) => `batch:${JSON.stringify(calls)}`

/** The records of one type, in log order. */
export const records = (entries: LogEntry[], type: string) =>
  entries.map((e) => e.record as Record<string, any>).filter((r) => r.type === type)

/**
 * Polls `check` until it holds; fails with `what` after `timeoutMs` scaled by the machine's patience
 * (a liveness guard, not a speed bound: test/helpers/patience.ts).
 */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + patient(timeoutMs)
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (${patient(timeoutMs)} ms)`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
