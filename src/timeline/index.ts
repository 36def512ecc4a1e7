export { Timeline, type TimelineItem, type TimelineKind } from './items.js'
