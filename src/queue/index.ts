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
  finishCancelledCall,
  inspectTurnJob,
  inspectCallJob,
  HarnessQueues,
} from './enqueue.js'
