export { processTurnJob, type TurnJobDeps } from './turnJob.js'
