export { createLocalLane, localLaneEnabled, type LocalLane, type LocalWaiters } from './localLane.js'
