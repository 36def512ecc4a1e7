export { createLocalLane, localLaneEnabled, type LocalLane } from './localLane.js'
