import { countCallLanded, countCallStarted } from './metrics.js'
import { noteAttempt } from './tracing.js'

/** A tool call attempt began (not a call already done): its span's attempt and kind, the started counter. */
export function callBegan(harness: string, call: { name: string }, begin: { attempt: number; kind: string }): void {
  noteAttempt({ 'harness.attempt': begin.attempt, 'harness.begin': begin.kind })
  countCallStarted(harness, call.name, begin.kind)
}

/**
 * A tool call's kept result, about to land: its span's call outcome. Called while the attempt's span
 * is open (a landing sent behind the job's completion is answered after the span ended).
 */
export function callLanding(kept: object): 'error' | 'result' {
  const outcome = 'error' in kept && kept.error ? 'error' : 'result'
  noteAttempt({ 'harness.call.outcome': outcome })
  return outcome
}

/** A tool call's result landed: the landed counter and the call latency (from `sinceMs`). */
export function callLanded(harness: string, call: { name: string }, outcome: 'error' | 'result', sinceMs: number): void {
  countCallLanded(harness, call.name, outcome, sinceMs)
}
