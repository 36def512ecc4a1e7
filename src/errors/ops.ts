// Bad input to the operator APIs (prompt tags, host.turns filters): refused before anything is written.
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
