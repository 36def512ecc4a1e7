import {
  context,
  ProxyTracerProvider,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api'

/**
 * OpenTelemetry spans of a harness: turn, model call, tool call attempt, step. Through
 * `@opentelemetry/api` only, so they cost nothing unless the application registers an SDK. A turn's
 * trace context travels in its jobs' data as a W3C `traceparent`, from `prompt` to the turn job, from
 * the turn to its tool jobs: one trace shows a turn across workers.
 */
const tracer = () => trace.getTracer('durable-harness')

/**
 * False while no SDK is registered (the global provider is the API's proxy with no delegate): a span
 * then records nothing and has no context to pass on, so it is not made at all (four a 3-step call).
 */
function tracing(): boolean {
  const provider = trace.getTracerProvider()
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer('durable-harness') !== undefined
}

const NO_NOTES: SpanNotes = { outcome: () => {}, set: () => {} }

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The active span's context as a W3C traceparent for job data; {} when there is none (no SDK, no span). */
export function traceField(): { traceparent?: string } {
  const span = trace.getSpanContext(context.active())
  if (!span || !trace.isSpanContextValid(span)) return {}
  return {
    traceparent: `00-${span.traceId}-${span.spanId}-${(span.traceFlags & TraceFlags.SAMPLED ? 1 : 0).toString(16).padStart(2, '0')}`,
  }
}

/** The context a job's span continues: its traceparent's, else the active one. */
function parentOf(traceparent: string | undefined): Context {
  const found = traceparent ? TRACEPARENT.exec(traceparent) : null
  if (!found) return context.active()
  return trace.setSpanContext(context.active(), {
    traceId: found[1]!,
    spanId: found[2]!,
    traceFlags: parseInt(found[3]!, 16),
    isRemote: true,
  })
}

/** What a span's function may add: its outcome (an attribute, `harness.outcome`) and more attributes. */
export interface SpanNotes {
  outcome(outcome: string): void
  set(attributes: Attributes): void
}

/**
 * Runs `fn` in a span of `name`. Without an SDK, `fn`'s own promise is returned as is: no span, no
 * attributes made (`span()` is not called), no async frame of its own around it (a step, a call).
 */
function inSpan<T>(
  name: string,
  span: () => { parent: Context; attributes: Attributes },
  fn: (notes: SpanNotes) => Promise<T>,
  kind = SpanKind.INTERNAL,
): Promise<T> {
  if (!tracing()) {
    try {
      return fn(NO_NOTES)
    } catch (error) {
      return Promise.reject(error)
    }
  }
  const { parent, attributes } = span()
  return tracer().startActiveSpan(name, { kind, attributes }, parent, async (span: Span) => {
    let outcome: string | undefined
    const notes: SpanNotes = { outcome: (o) => void (outcome = o), set: (a) => void span.setAttributes(a) }
    try {
      const value = await fn(notes)
      span.setAttribute('harness.outcome', outcome ?? 'ok')
      return value
    } catch (error) {
      // a park or a wait for children is a planned end (BullMQ's Delayed/WaitingChildren errors), not a failure
      const failure = error instanceof Error ? error : undefined
      const planned = failure?.name === 'DelayedError' || failure?.name === 'WaitingChildrenError'
      span.setAttribute('harness.outcome', outcome ?? (planned ? (failure?.name === 'DelayedError' ? 'parked' : 'waiting') : 'failed'))
      if (!planned) {
        span.recordException(failure ?? String(error))
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure?.message })
      }
      throw error
    } finally {
      span.end()
    }
  })
}

/** One run of a turn job (a turn may run in several, on several workers: each continues the prompt's trace). */
export function turnSpan<T>(
  data: { sessionId: string; inputId: string; harness: string; traceparent?: string },
  attempt: number,
  fn: (notes: SpanNotes) => Promise<T>,
): Promise<T> {
  const span = () => ({
    parent: parentOf(data.traceparent),
    attributes: {
      'harness.name': data.harness,
      'harness.session_id': data.sessionId,
      'harness.input_id': data.inputId,
      'harness.attempt': attempt,
    },
  })
  return inSpan('harness.turn', span, fn, SpanKind.CONSUMER)
}

/** One model call of a turn. */
export function modelSpan<T>(attributes: { sessionId: string; inputId: string; iteration: number }, fn: () => Promise<T>): Promise<T> {
  const span = () => ({
    parent: context.active(),
    attributes: {
      'harness.session_id': attributes.sessionId,
      'harness.input_id': attributes.inputId,
      'harness.iteration': attributes.iteration,
    },
  })
  return inSpan('harness.model', span, fn, SpanKind.CLIENT)
}

/** One attempt of a tool call job; the attempt number and outcome are noted by the job as it learns them. */
export function callAttemptSpan<T>(
  call: () => { sessionId: string; toolCallId: string; name: string; inputId?: string; traceparent?: string },
  fn: (notes: SpanNotes) => Promise<T>,
): Promise<T> {
  const span = () => {
    const data = call()
    const attributes = {
      'harness.session_id': data.sessionId,
      'harness.tool_call_id': data.toolCallId,
      'harness.tool': data.name,
      ...(data.inputId ? { 'harness.input_id': data.inputId } : {}),
    }
    return { parent: parentOf(data.traceparent), attributes }
  }
  return inSpan('harness.tool.attempt', span, fn, SpanKind.CONSUMER)
}

/** Notes on the active tool attempt span (from inside the job: its durable attempt number, how it began). */
export function noteAttempt(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes)
}

/** One step.do that runs (a stored step is replayed without a span). */
export function stepSpan<T>(toolCallId: string, name: string, fn: () => Promise<T>): Promise<T> {
  return inSpan(
    'harness.step',
    () => ({ parent: context.active(), attributes: { 'harness.tool_call_id': toolCallId, 'harness.step': name } }),
    fn,
  )
}
