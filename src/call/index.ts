export { processToolJob, type ToolJobDeps } from './toolJob.js'
export { AGENT, isAgentTool, childSessionId, CHILD_INPUT_ID, type AgentToolMarker } from './agentCall.js'
export { CallAborts } from './callAborts.js'
export { resolveSecrets } from './keptResult.js'
