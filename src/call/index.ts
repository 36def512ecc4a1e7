export { processToolJob } from './toolJob.js'
export { AGENT, isAgentTool, childSessionId, type AgentToolMarker } from './agentCall.js'
export { CallAborts } from './callAborts.js'
export { resolveSecrets } from './keptResult.js'
