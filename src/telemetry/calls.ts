import { countCallLanded, countCallStarted } from './metrics.js'
import { noteAttempt } from './tracing.js'

/** A tool call attempt began (not a call already done): its span's attempt and kind, the started counter. */
export function callBegan(harness: string, call: { name: string }, begin: { attempt: number; kind: string }): void {
  noteAttempt({ 'harness.attempt': begin.attempt, 'harness.begin': begin.kind })
  countCallStarted(harness, call.name, begin.kind)
}

/** A tool call's result landed: its span's call outcome, the landed counter and the call latency (from `sinceMs`). */
export function callLanded(harness: string, call: { name: string }, kept: object, sinceMs: number): void {
  const outcome = 'error' in kept && kept.error ? 'error' : 'result'
  noteAttempt({ 'harness.call.outcome': outcome })
  countCallLanded(harness, call.name, outcome, sinceMs)
}
