// Bad input to the operator APIs (prompt tags, host.turns filters, rerun's calls): refused before anything is written.
import { DurableHarnessError, describeValue } from './base.js'

/** `prompt(text, { metadata, principal })` with tags that cannot be stored or searched. */
export class InvalidTagsError extends DurableHarnessError {
  constructor(what: string, value: unknown, rule: string) {
    super('invalid_tags', `Invalid ${what} ${describeValue(value)}: ${rule}. Nothing was logged.`)
  }
}

/** A `host.turns` / `host.replay` / `host.cancel` filter the turns index cannot answer. */
export class InvalidTurnFilterError extends DurableHarnessError {
  constructor(option: string, value: unknown, rule: string) {
    super('invalid_turn_filter', `Invalid turns filter ${option} ${describeValue(value)}: ${rule}.`)
  }
}

/**
 * `session.rerun(inputId, { again })` naming a call it cannot run again: no call of the turn's last
 * model response, a call that landed its result (R19: never run again), or one with no result yet.
 */
export class RerunCallError extends DurableHarnessError {
  constructor(
    readonly toolCallId: unknown,
    reason: 'not_in_turn' | 'landed' | 'pending',
    inputId: string,
  ) {
    const why = {
      not_in_turn: `it is no call of the last model response of turn ${inputId} (harness log <sessionId> shows its tool call ids)`,
      landed: 'it landed its result, and a rerun never runs a call that did (R19)',
      pending: 'it has no result yet: it still runs or waits, and lands on its own',
    }[reason]
    super('rerun_call', `Cannot run call ${describeValue(toolCallId)} again: ${why}. Nothing was rerun.`)
  }
}

/**
 * host.fork refused (docs/compaction.md, "Fork"): the source session is unknown, a turn of the span
 * to copy is not settled (it runs, waits in line, or has a parked or open call), the new session
 * exists already, or the options are wrong. Nothing was written.
 */
export class ForkError extends DurableHarnessError {
  constructor(
    readonly sessionId: string,
    why: string,
  ) {
    super('fork_refused', `Cannot fork session ${describeValue(sessionId)}: ${why}. Nothing was written.`)
  }
}
