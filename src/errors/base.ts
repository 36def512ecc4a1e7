/**
 * Every error the library throws on purpose. Each one says what was wrong and what to do,
 * and carries a stable `code` so callers can branch without parsing messages.
 */
export class DurableHarnessError extends Error {
  readonly code: string
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}

/** JSON for an error message, cut short: a caller's bad value may be huge. */
export function describeValue(value: unknown): string {
  let text: string
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value))
  } catch {
    text = `(a ${typeof value})`
  }
  return text.length > 120 ? `${text.slice(0, 120)}…` : text
}

export function causeText(cause: unknown): string {
  try {
    return cause instanceof Error ? cause.message : String(cause)
  } catch {
    return 'an error that cannot be described'
  }
}
