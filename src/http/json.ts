// JSON in and out: request bodies and query parameters checked with zod (a bad request is a 400 with
// the reason), and the JSON responses, refusals included.
import { z } from 'zod'
import { DurableHarnessError, type DurableHarnessErrorCode } from '../errors/index.js'
import { MAX_EVENT_ADDRESS_LENGTH } from '../log/eventAddress.js'
import { isSafeId } from '../log/keys.js'

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
const STATUS_BY_CODE: Partial<Record<DurableHarnessErrorCode, number>> = {
  invalid_id: 400,
  invalid_cursor: 400,
  not_json: 400,
  value_too_large: 400,
  secret_in_value: 400,
  invalid_answer: 400,
  invalid_event_payload: 400,
  invalid_event_address: 400,
  input_conflict: 409,
  question_answered: 409,
  question_expired: 409,
  // its call was cancelled: the turn was aborted
  question_closed: 409,
  question_unknown: 404,
  unknown_input: 404,
  // rerun's `again` names no call of the turn, or one that landed its result
  rerun_call: 409,
  fork_refused: 409,
  // the harness's secrets resolver failed: the input could not be checked for secrets; try again later
  secrets_unavailable: 503,
  // session.compact(): the summary call failed; nothing was logged, try again later
  compaction_failed: 503,
}

/** The response for an error thrown while answering; null for one that is not the caller's fault. */
export function errorResponse(error: unknown): Response | null {
  if (error instanceof HttpError) return json({ error: error.message, ...(error.code ? { code: error.code } : {}) }, error.status)
  if (!(error instanceof DurableHarnessError)) return null
  const status = STATUS_BY_CODE[error.code]
  return status === undefined ? null : json({ error: error.message, code: error.code }, status)
}

// the library's own id rule (session, input and question ids alike)
const id = (what: string) =>
  z.string({ error: `${what} is required` }).refine(isSafeId, `${what}: use 1 to 200 characters from [A-Za-z0-9._-]`)

/** AG-UI RunAgentInput as `fetchServerSentEvents` sends it; only what the handler reads is checked. */
export const runInputSchema = z.object({
  threadId: id('threadId'),
  runId: id('runId'),
  messages: z.array(z.object({ role: z.string(), content: z.unknown().optional() }).loose()),
  /** The client's `forwardedProps`: the turn's context (`ctx.context` of its tool calls). */
  forwardedProps: z.unknown().optional(),
  /** A resume of an interrupted run (TanStack's interrupt flow): the run it continues and the decisions. */
  parentRunId: id('parentRunId').optional(),
  resume: z
    .array(z.object({ interruptId: id('interruptId'), status: z.enum(['resolved', 'cancelled']), payload: z.unknown().optional() }))
    .max(100)
    .optional(),
})

/** An event name or key: each message says the limit (the host checks the rest: InvalidEventAddressError). */
const addressPart = (name: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? `${name} is required` : `${name} must be a string`) })
    .min(1, `${name} must not be empty`)
    .max(MAX_EVENT_ADDRESS_LENGTH, `${name} is too long: at most 1,000 characters`)

export const controlSchema = z.discriminatedUnion(
  'op',
  [
    z.object({
      op: z.literal('prompt'),
      threadId: id('threadId'),
      text: z.string(),
      inputId: id('inputId').optional(),
      metadata: z.record(z.string(), z.string()).optional(),
    }),
    z.object({ op: z.literal('answer'), threadId: id('threadId'), questionId: id('questionId'), value: z.unknown() }),
    z.object({ op: z.literal('abort'), threadId: id('threadId'), inputId: id('inputId'), reason: z.string().max(1000).optional() }),
    z.object({ op: z.literal('resume'), threadId: id('threadId'), inputId: id('inputId') }),
    z.object({ op: z.literal('compact'), threadId: id('threadId') }),
    z.object({ op: z.literal('reset'), threadId: id('threadId'), note: z.string().optional() }),
    z.object({
      op: z.literal('event'),
      event: addressPart('event'),
      key: addressPart('key'),
      payload: z.unknown().optional(),
      id: id('id').optional(),
      sessionId: id('sessionId').optional(),
    }),
    z.object({
      op: z.literal('rerun'),
      threadId: id('threadId'),
      inputId: id('inputId'),
      rerunId: id('rerunId').optional(),
      // tool call ids to run again although the rerun keeps them (session.rerun's `again`)
      again: z.array(id('again')).max(100).optional(),
    }),
  ],
  { error: "op must be 'prompt', 'answer', 'abort', 'resume', 'rerun', 'compact', 'reset' or 'event'" },
)

/** Parses a value with a schema; a 400 with zod's one-line reason when it does not fit. */
export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value)
  if (!parsed.success) throw new HttpError(400, z.prettifyError(parsed.error).replace(/\n\s*/g, ' '), 'bad_request')
  return parsed.data
}

/** A request body over this is refused (413) while it is read: prompts and answers are far smaller. */
const MAX_BODY_BYTES = 4 * 1024 * 1024
/** Arrays and objects nested deeper than this are refused (400) before parsing: no value needs it, and deeper ones overflow the stack of whatever walks them. */
const MAX_JSON_DEPTH = 64

/**
 * The request body as JSON. 415 unless it is sent as `application/json` (a cross-site form or
 * `text/plain` POST cannot be, so a cookie-based `authorize` is no CSRF opening); 413 as soon as it
 * passes the limit, declared or while streaming (the rest is never read); 400 when it is not JSON or
 * nested too deep.
 */
export async function readJson(request: Request): Promise<unknown> {
  assertJsonType(request.headers.get('content-type'))
  if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) throw tooLarge()
  const text = await readText(request.body, MAX_BODY_BYTES)
  assertDepth(text, MAX_JSON_DEPTH)
  try {
    const body: unknown = JSON.parse(text)
    return body
  } catch {
    throw new HttpError(400, 'The request body must be JSON.', 'bad_request')
  }
}

const tooLarge = () => new HttpError(413, `The request body is over ${MAX_BODY_BYTES} bytes.`, 'body_too_large')

/** `application/json`, with any parameters but a charset other than UTF-8 (JSON is UTF-8, RFC 8259). */
function assertJsonType(header: string | null): void {
  const [media, ...params] = (header ?? '').split(';').map((part) => part.trim().toLowerCase())
  const utf8 = params.every((p) => !p.startsWith('charset=') || /^charset="?utf-8"?$/.test(p))
  if (media === 'application/json' && utf8) return
  throw new HttpError(
    415,
    'The request body must be JSON sent with Content-Type: application/json (optionally ; charset=utf-8); ' +
      'this request has another type or none. Nothing was written.',
    'unsupported_media_type',
  )
}

/** The body as text, read a chunk at a time: past `limit` bytes the reading stops (cancelled) with a 413. */
async function readText(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string> {
  if (!body) return ''
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge()
    }
    chunks.push(value)
  }
  return new TextDecoder().decode(Buffer.concat(chunks, size))
}

/** 400 when arrays and objects nest deeper than `max`; a scan of the text, so nothing deep is ever built. */
function assertDepth(text: string, max: number): void {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // a backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max)
        throw new HttpError(400, `The request body nests arrays and objects too deep: at most ${max} levels are taken.`, 'bad_request')
    } else if (c === 0x5d || c === 0x7d) depth--
  }
}

/** A query parameter that must be an id; 400 when it is missing or not one. */
export function queryId(url: URL, name: string): string {
  return parse(id(name), url.searchParams.get(name) ?? undefined)
}

/** The text of the last user message: its string content, or its text parts joined. 400 for none. */
export function promptText(messages: ReadonlyArray<{ role: string; content?: unknown }>): string {
  const last = [...messages].reverse().find((m) => m.role === 'user')
  if (!last) throw new HttpError(400, 'messages must hold a user message: its text is the prompt.', 'bad_request')
  if (typeof last.content === 'string') return last.content
  const parts = Array.isArray(last.content) ? last.content : []
  const texts = parts.flatMap((p: unknown) => (isTextPart(p) ? [p.text] : []))
  if (texts.length === 0) throw new HttpError(400, 'The last user message has no text: only text prompts are supported.', 'bad_request')
  return texts.join('')
}

function isTextPart(part: unknown): part is { type: 'text'; text: string } {
  return (
    typeof part === 'object' && part !== null && 'type' in part && part.type === 'text' && 'text' in part && typeof part.text === 'string'
  )
}
