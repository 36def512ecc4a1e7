export { processTurnJob } from './turnJob.js'
export { settleTurn } from './settle.js'
export { foldTurn } from './fold.js'
