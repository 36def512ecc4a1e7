export { followEvents, type EventsOptions, type SessionEvent } from './follow.js'
