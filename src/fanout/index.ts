// Fan-out from a durable tool (docs/fan-out.md): child calls of a call, their tree's limits, their wake-ups and cancels.
export { createChildTools } from './childTools.js'
export { childCancelledError } from './cancelChildren.js'
