export { createLocalLane, localLaneEnabled, type LocalLane } from './localLane.js'
export { activeListOf, isVerifiedBullmq, LIVE_TOKEN, nameAfterProcess, reclaimOf } from './bullmqInternals.js'
