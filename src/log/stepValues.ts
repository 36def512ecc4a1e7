/** Stored form of a step value: '' means the step returned nothing (JSON has no undefined). */
const NO_VALUE = ''

/** A step value as the steps hash holds it. */
export function encodeValue(value: unknown): string {
  return value === undefined ? NO_VALUE : JSON.stringify(value)
}

/** A stored step value back (undefined: a step that returned nothing). */
export function decodeValue(stored: string): unknown {
  return stored === NO_VALUE ? undefined : JSON.parse(stored)
}

export type StoredValue = { found: true; value: unknown }
export type StepLookup = { found: false } | StoredValue
