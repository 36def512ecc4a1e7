export { sweep, type SweepOptions, type Repair } from './sweeper.js'
