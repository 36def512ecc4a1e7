export { DeadWorkers } from './deadWorkers.js'
export { ProcessLiveness, workerLivenessEnabled } from './processLiveness.js'
