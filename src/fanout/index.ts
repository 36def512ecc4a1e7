// Fan-out from a durable tool (docs/fan-out.md): child calls and child agents of a call, their tree's limits, their wake-ups and cancels.
export { createFanout } from './attempt.js'
export type { AgentChildInput } from './childAgents.js'
export { cancelDescendants, childCancelledError } from './cancelChildren.js'
export { agentOfCall, CHILD_INPUT_ID, childSessionId, childTree, placeChild, treeOf, type AgentHost } from './place.js'
export { treeLimitError } from './names.js'
