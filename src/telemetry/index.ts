export { turnSpan, modelSpan, callAttemptSpan, stepSpan } from './tracing.js'
export { countFenced, countLockLost, countModelUsage, countRecovery, observeTurn, observeLimitWait, metricsText } from './metrics.js'
export { serveMetrics } from './metricsServer.js'
export { callBegan, callLanded, callLanding } from './calls.js'
