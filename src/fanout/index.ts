// Fan-out from a durable tool (docs/fan-out.md): child calls of a call, their tree's limits, their wake-ups and cancels.
export { createChildTools } from './childTools.js'
export { cancelDescendants, childCancelledError } from './cancelChildren.js'
