/**
 * Every error the library throws on purpose: a `DurableHarnessError` with a stable `code`, a message
 * that says what was wrong and what to do. Grouped by where it comes from (src/errors/).
 */
export { DurableHarnessError, isDurableHarnessError, type DurableHarnessErrorCode } from './errors/base.js'
export * from './errors/input.js'
export * from './errors/session.js'
export * from './errors/storage.js'
export * from './errors/retry.js'
export * from './errors/events.js'
