import { DurableHarnessError } from '../errors/index.js'

/** A refusal with its HTTP status; the handler turns it into a JSON `{ error, code? }` response. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message)
  }
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers },
  })
}

// the library's own errors that are the caller's fault, by code; the rest are 500
const STATUS_BY_CODE: Record<string, number> = {
  invalid_id: 400,
  invalid_cursor: 400,
  not_json: 400,
  value_too_large: 400,
  secret_in_value: 400,
  invalid_answer: 400,
  invalid_event_payload: 400,
  input_conflict: 409,
  question_answered: 409,
  question_expired: 409,
  // its call was cancelled: the turn was aborted
  question_closed: 409,
  question_unknown: 404,
  unknown_input: 404,
  // the harness's secrets resolver failed: the input could not be checked for secrets; try again later
  secrets_unavailable: 503,
}

/** The response for an error thrown while answering; null for one that is not the caller's fault. */
export function errorResponse(error: unknown): Response | null {
  if (error instanceof HttpError) return json({ error: error.message, ...(error.code ? { code: error.code } : {}) }, error.status)
  if (error instanceof DurableHarnessError && STATUS_BY_CODE[error.code])
    return json({ error: error.message, code: error.code }, STATUS_BY_CODE[error.code])
  return null
}
