export { sweep, DEFAULT_GRACE_MS, type SweepDeps, type SweepOptions, type Repair } from './sweeper.js'
