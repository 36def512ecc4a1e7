export { takeSlot, limitStates, type HeldSlot } from './slot.js'
