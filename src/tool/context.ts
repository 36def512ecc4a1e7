import type { ToolExecutionContext } from '@tanstack/ai'
import type { StandardSchemaV1 } from '@standard-schema/spec'
import type { Duration } from './duration.js'
import type { JsonChecked } from './json.js'
import type { RetryPolicy } from './retry.js'
import type { Secrets } from './secrets.js'
import type { ChildAgents, ChildTools } from './children.js'
import type { BudgetLeft } from '../log/index.js'

/** What happens to a call a crash cut short: `'safe'` runs it again (finished steps return their stored values), `'never'` lands a tool error (`interrupted`). */
export type Replay = 'safe' | 'never'

type JsonPrimitive = string | number | boolean | null | undefined | void

/**
 * The compile-time half of R3, as a constraint that still infers `T` from a callback: a Date, Map,
 * Set, bigint, symbol or class instance with methods, at any depth, is a type error at the call site.
 * `& object` keeps bigint and symbol out (a mapped type over a primitive is the primitive); a function
 * has no keys, so it would pass as `{}`: every function has `Symbol.hasInstance`, no JSON object has it.
 */
type JsonStepValue<T> = JsonPrimitive | ({ [K in keyof T]: JsonChecked<T[K]> } & object & { [Symbol.hasInstance]?: never })

/** What the function of `step.do` gets: the idempotency key to pass to its side effect. */
export interface StepFnOptions {
  /** `${logId}:${toolCallId}:${name}`: the same on every run of the step. Pass it to the side effect. */
  idempotencyKey: string
}

/** Options of one `step.do`: its retry policy. */
export interface StepOptions {
  /** Tries fn again when it throws (R16); default the tool's `retry` (durableTool option), else none. */
  retry?: RetryPolicy
}

/** A question of `step.ask`: its step name, the message a person reads, the schema of the answer and an optional expiry. */
export interface AskOptions<S extends StandardSchemaV1> {
  /** Step name of the question: the same on every run. */
  name: string
  message: string
  /** Validates the answer; its JSON Schema is logged with the question for UIs. */
  schema: S
  /** When the question stops accepting answers; the ask then throws QuestionExpiredError. */
  expiresAt?: Date | number | string
}

/** A wait of `step.waitForEvent`: the step name, the event and its correlation key, the payload's schema and the timeout. */
export interface WaitForEventOptions<S extends StandardSchemaV1 | undefined = undefined> {
  /** Step name of the wait: the same on every run. */
  name: string
  /** The event's name, e.g. `payment.settled`. */
  event: string
  /** The correlation key the sender names, e.g. the order id. */
  key: string
  /** Validates the payload; a payload it refuses wakes nothing (`host.sendEvent` throws InvalidEventPayloadError). */
  schema?: S
  /** How long to wait (ms or '90s' | '15m' | '3d'; at most 365 days); then the wait throws EventTimeoutError. */
  timeout: Duration
  /**
   * `'session'`: only an event sent to this call's session (`host.sendEvent({ ..., sessionId })`) wakes
   * it, so a key a model chose cannot take or see another session's event. Default `'global'`: any
   * event on (event, key), whatever session sends or waits (docs/machine-events.md).
   */
  scope?: 'session' | 'global'
}

/** `ctx.step` of a durable tool: each side effect as a named step that runs once per tool call (`do`), and waits that hold no worker slot (`sleep`, `sleepUntil`, `ask`). */
export interface Step {
  /**
   * Runs `fn` once per tool call; resolves with the stored JSON copy (R1, R3). With `retry`, a throw
   * is tried again under the same idempotency key; the tries and the next time are stored (R16).
   * @example
   * ```ts
   * const charge = await step.do('charge', ({ idempotencyKey }) => payments.charge({ orderId, amount, idempotencyKey }), {
   *   retry: { attempts: 3 },
   * })
   * ```
   */
  do<T extends JsonStepValue<T>>(name: string, fn: (options: StepFnOptions) => T | Promise<T>, options?: StepOptions): Promise<T>
  /** Waits `duration` without holding a worker slot; the wake time is logged once (R7). */
  sleep(name: string, duration: Duration): Promise<void>
  sleepUntil(name: string, at: Date | number): Promise<void>
  /** Asks a person; resolves with the validated answer (R8). */
  ask<S extends StandardSchemaV1>(options: AskOptions<S>): Promise<StandardSchemaV1.InferOutput<S>>
  /**
   * Waits for a machine event (`host.sendEvent({ event, key, payload })`) without holding a worker
   * slot; resolves with its payload, stored like a step value. An event sent before the wait is kept
   * for the host's event retention (R20). Throws EventTimeoutError after `timeout`.
   */
  waitForEvent<S extends StandardSchemaV1 | undefined = undefined>(
    options: WaitForEventOptions<S>,
  ): Promise<S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : unknown>
}

/** A user record added with `append`: any JSON object with a `type` not starting with `harness.`. */
export type AppendRecord = { type: string } & Record<string, unknown>

export interface DurableContextFields {
  step: Step
  /** Stages records that land with the tool result, in the same atomic write (R9). */
  append(records: AppendRecord[]): void
  secrets: Secrets
  /** Other tools of the harness as child calls, each its own durable call (docs/fan-out.md). */
  tools: ChildTools
  /** Turns of child agents (sessions of other harnesses), each durable (docs/fan-out.md). */
  agents: ChildAgents
  /**
   * The budgets of the call's turn (`defineHarness({ budgets })`, docs/spend.md) and what is left of
   * each, read now: `[]` when it has none, or outside a durable session.
   */
  budget(): Promise<BudgetLeft[]>
}

/** What a durable tool's execute gets: the `@tanstack/ai` tool context plus step, append, secrets. */
export type DurableToolContext<TContext = unknown> = Omit<ToolExecutionContext<TContext>, 'emitCustomEvent'> &
  Partial<Pick<ToolExecutionContext<TContext>, 'emitCustomEvent'>> &
  DurableContextFields & { toolCallId: string }
