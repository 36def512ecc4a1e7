export { processToolJob } from './toolJob.js'
export { AGENT, CHILD_INPUT_ID, isAgentTool, childSessionId, type AgentToolMarker } from './agentCall.js'
export { CallAborts, cancelledError } from './callAborts.js'
export { skipsBegin } from './loggedCall.js'
