import { isDurableHarnessError } from '../errors/index.js'
import type { ToolErrorPayload } from '../log/index.js'

/** A tool error's message is cut here: the model reads it and the log keeps it. */
const MAX_MESSAGE_CHARS = 8_192

/**
 * Turns anything a tool threw into the error payload the model reads. Never throws: a tool may throw
 * a Symbol, `Object.create(null)`, a Proxy whose traps throw, or an Error whose `message` getter
 * throws, and each must still land as one tool error.
 */
export function toToolError(error: unknown): ToolErrorPayload {
  try {
    // by the brand: an error of the tool's own copy of the package keeps its code too
    if (isDurableHarnessError(error) && typeof error.message === 'string' && typeof error.code === 'string')
      return { message: cut(error.message), code: error.code }
  } catch {
    // a Proxy's traps or a getter may throw: describe it below
  }
  return { message: cut(describeThrown(error)) }
}

const readers: Array<(error: unknown) => unknown> = [
  (error) => (error instanceof Error ? error.message || error.name : undefined),
  (error) => (typeof error === 'symbol' ? error.toString() : undefined),
  (error) => String(error),
]

function describeThrown(error: unknown): string {
  for (const read of readers) {
    try {
      const text = read(error)
      if (typeof text === 'string' && text.length > 0) return text
    } catch {
      // this reader tripped on the value (a throwing getter or trap): try the next
    }
  }
  return 'The tool threw a value that has no readable message.'
}

function cut(message: string): string {
  return message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}… (cut at ${MAX_MESSAGE_CHARS} characters)` : message
}
