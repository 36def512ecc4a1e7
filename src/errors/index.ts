/**
 * Every error the library throws on purpose: a `DurableHarnessError` with a stable `code`, a message
 * that says what was wrong and what to do. Grouped by where it comes from, one file a group.
 */
export { DurableHarnessError, isDurableHarnessError, type DurableHarnessErrorCode } from './base.js'
export * from './input.js'
export * from './session.js'
export * from './storage.js'
export * from './retry.js'
export * from './events.js'
export * from './ops.js'
export * from './codec.js'
