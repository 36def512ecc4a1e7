import { createHash } from 'node:crypto'
import { convertSchemaToJsonSchema } from '@tanstack/ai'
import type { StandardSchemaV1 } from '@standard-schema/spec'
import { InvalidAnswerError, QuestionExpiredError } from '../errors/index.js'
import type { StepLookup } from '../log/index.js'
import type { AskOptions } from './context.js'
import { Park } from './park.js'
import type { RecordedSteps } from './recordedSteps.js'

/** How long an ask without expiresAt parks before the job re-checks (answers promote it at once). */
const ASK_HORIZON_MS = 24 * 3_600_000

/** Deterministic per (call, step name), so a run again after a crash asks the same question. */
export function questionIdOf(toolCallId: string, name: string): string {
  return `q-${createHash('sha256').update(`${toolCallId}\0${name}`).digest('hex').slice(0, 24)}`
}

type Validated = { ok: true; value: unknown } | { ok: false; message: string }

/** A Standard Schema's result as ours: the parsed output or an issue text. */
function verdictOf(result: StandardSchemaV1.Result<unknown>): Validated {
  if (!result.issues) return { ok: true, value: result.value }
  const message = result.issues
    .map((i) => `${i.message}${i.path?.length ? ` at ${i.path.map((p) => (typeof p === 'object' ? p.key : p)).join('.')}` : ''}`)
    .join('; ')
  return { ok: false, message }
}

/**
 * Validates with `schema` when a tool has one (any Standard Schema); with none the value passes as
 * is. No promise when it needs none: no schema, or one that validates synchronously (zod does, unless
 * it has async refinements). A call's input and result are checked so, on every call
 * (`const v = validateNow(s, x); const checked = v instanceof Promise ? await v : v`); elsewhere it is awaited.
 */
export function validateNow(schema: unknown, value: unknown): Validated | Promise<Validated> {
  if (!isStandardSchema(schema)) return { ok: true, value }
  const result = schema['~standard'].validate(value)
  return result instanceof Promise ? result.then(verdictOf) : verdictOf(result)
}

/** A Standard Schema (zod included) by its `~standard` property, as validateNow tells one. */
function isStandardSchema(schema: unknown): schema is StandardSchemaV1 {
  return !!schema && typeof schema === 'object' && '~standard' in schema
}

function toEpochMs(at: Date | number | string): number {
  const ms = at instanceof Date ? at.getTime() : typeof at === 'string' ? Date.parse(at) : at
  if (!Number.isFinite(ms)) throw new TypeError(`step.ask expiresAt ${JSON.stringify(at)} is not a date.`)
  return ms
}

interface AskDeps {
  steps: RecordedSteps
  lookup(name: string): Promise<StepLookup>
  park(p: Park): never
  checkValue(value: unknown, what: string): unknown
  /** Marks a failed write of ours (see stepCore.ts). */
  ours<T>(write: Promise<T>): Promise<T>
  /** The harness version the call began under, kept with the question. */
  version?: string
}

/**
 * step.ask (R8): logs the question once, then returns the logged answer, throws QuestionExpiredError
 * after expiresAt, or parks the call until an answer promotes it (or the expiry wakes it).
 */
export function createAsk({ steps, lookup, park, checkValue, ours, version }: AskDeps) {
  return async function ask<S extends StandardSchemaV1>(
    options: AskOptions<S>,
    kind: 'ask' | 'approval' = 'ask',
  ): Promise<StandardSchemaV1.InferOutput<S>> {
    const { name, message, schema } = options
    const questionId = questionIdOf(steps.toolCallId, name)
    const expiresAt = options.expiresAt === undefined ? undefined : toEpochMs(options.expiresAt)
    // R6 before any read or write, and on a run again too (the name was checked when it was claimed)
    checkValue(message, `Question "${name}" message`)
    const stored = await lookup(name)
    if (!stored.found) {
      const jsonSchema = checkValue(convertSchemaToJsonSchema(schema) ?? {}, `Question "${name}" schema`)
      await ours(
        steps.recordQuestion(name, {
          toolCallId: steps.toolCallId,
          questionId,
          name,
          message,
          schema: jsonSchema,
          ...(expiresAt === undefined ? {} : { expiresAt }),
          ...(kind === 'approval' ? { kind } : {}),
          ...(version === undefined ? {} : { version }),
        }),
      )
    }
    const q = await ours(steps.question(questionId))
    if (q?.answer.found) {
      const checked = await validateNow(schema, q.answer.value)
      if (!checked.ok) throw new InvalidAnswerError(questionId, checked.message)
      return checked.value as StandardSchemaV1.InferOutput<S>
    }
    const deadline = q?.question.expiresAt ?? expiresAt
    if (deadline !== undefined && Date.now() >= deadline) throw new QuestionExpiredError(questionId, new Date(deadline).toISOString())
    return park(new Park('ask', deadline ?? Date.now() + ASK_HORIZON_MS, name))
  }
}
