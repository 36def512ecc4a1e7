export { createQueues, startWorkerSet, type HarnessQueues } from './workers.js'
export { bullPrefix, toolQueueName, turnQueueName, toolJobId, turnJobId, type ToolJobData, type TurnJobData } from './names.js'
export { toolJobOptions, turnJobOptions } from './turnJob.js'
export type { RuntimeHarness, DurabilityOptions, AfterToolCallInfo, AfterToolCallDecision, AfterToolCallHook } from './runtime.js'
