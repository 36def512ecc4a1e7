export { takeSlot, limitKey, limitStates, type HeldSlot, type WaitingSlot, type LimitPlace, type LimitSubject } from './slot.js'
