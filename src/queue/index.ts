export { bullPrefix, toolQueueName, turnQueueName, type ToolJobData, type TurnJobData } from './names.js'
export {
  createQueues,
  toolJobOptions,
  finishedJobs,
  enqueueTurn,
  enqueueCall,
  enqueueCallBehind,
  enqueueCalls,
  wakeCall,
  wakeTurn,
  finishCancelledCall,
  inspectTurnJob,
  inspectCallJob,
  HarnessQueues,
} from './enqueue.js'
export { wakeCallByName } from './wake.js'
