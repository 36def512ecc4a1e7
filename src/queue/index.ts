export { bullPrefix, toolQueueName, turnQueueName, type ToolJobData, type TurnJobData } from './names.js'
export {
  createQueues,
  toolJobOptions,
  enqueueTurn,
  enqueueCall,
  enqueueCalls,
  wakeCall,
  finishCancelledCall,
  inspectTurnJob,
  inspectCallJob,
  HarnessQueues,
} from './enqueue.js'
