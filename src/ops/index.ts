export { listSessions, harnessOf, type SessionSummary, type SessionsFilter } from './sessions.js'
export { hostStats, type HostStats, type QueueStats } from './stats.js'
export { hostQueues, type QueueRef } from './queues.js'
export { openQuestions } from './questions.js'
