export { DeadWorkers, GONE_GRACE_MS } from './deadWorkers.js'
export { ProcessLiveness, workerLivenessEnabled } from './processLiveness.js'
