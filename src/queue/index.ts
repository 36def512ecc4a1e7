export { bullPrefix, toolQueueName, turnQueueName } from './names.js'
// the job data types live in core/; re-exported here for the callers that import them with the queue's functions
export type { ToolJobData, TurnJobData } from '../core/index.js'
export {
  toolJobOptions,
  finishedJobs,
  enqueueTurn,
  enqueueCall,
  enqueueCalls,
  wakeCall,
  wakeTurn,
  finishCancelledCall,
  inspectTurnJob,
  inspectCallJob,
  toolJob,
  type CallToEnqueue,
} from './enqueue.js'
export { createQueues, HarnessQueues } from './queues.js'
export { wakeCallByName } from './wake.js'
export { enqueueParkedCall, parkedToolJob, wakeEventWait, type ToolQueueOf } from './parked.js'
export { clearFinishedTurn, clearTrimmedJobs, type TrimmedJobs } from './finished.js'
export { pauseQueues, resumeQueues, queuesPaused } from './pause.js'
