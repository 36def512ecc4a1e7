/**
 * durable-harness/http: serve a harness's sessions over HTTP with one Fetch handler (docs/connect.md).
 */
export { createHarnessHandler } from './handler.js'
export { toNodeListener } from './node.js'
export type { HarnessHandlerOptions, Authorize, CanAccess, Principal } from './handler.js'
