/**
 * durable-harness/dashboard: the operators' web dashboard (sessions, live timelines, questions and
 * approvals, queue views, metrics) as a Hono app, and a Node server for it (docs/operations.md).
 */
export { createDashboard, type DashboardOptions } from './app.js'
export { serveDashboard, type ServeDashboardOptions } from './serve.js'
/** A session's events as readable timeline lines (the CLI's `log`, the dashboard's timeline). */
export { Timeline, type TimelineItem, type TimelineKind } from '../timeline/items.js'
