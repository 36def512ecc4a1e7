export { processTurnJob } from './turnJob.js'
