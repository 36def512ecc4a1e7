export { processTurnJob } from './turnJob.js'
export { settleTurn } from './settle.js'
