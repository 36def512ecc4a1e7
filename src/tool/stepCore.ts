import { z } from 'zod'
import { noteStepRun } from './stepRuns.js'
import type { StandardSchemaV1 } from '@standard-schema/spec'
import { RESERVED_PREFIX, WAIT_STEP_PREFIX, waitStepValueOf, type WaitStepValue } from '../core/index.js'
import { DuplicateStepError, ReservedRecordTypeError, StorageError } from '../errors/index.js'
import type { LogRecord, StepLookup, StepRetryState } from '../log/index.js'
import { stepSpan } from '../telemetry/index.js'
import { createAsk } from './ask.js'
import type { AppendRecord, DurableContextFields, Step, StepFnOptions, StepOptions, WaitForEventOptions } from './context.js'
import { parseDuration, parseWakeTime } from './duration.js'
import { encodeChecked, toJsonCopy } from './json.js'
import { Park } from './park.js'
import { NO_CHILD_AGENTS, NO_CHILD_TOOLS } from './children.js'
import type { AttemptHold, AttemptSignal, RecordedSteps } from './recordedSteps.js'
import type { RetryPolicy } from './retry.js'
import type { SecretStore } from './secrets.js'
import { policyOf, tryDurably } from './stepRetry.js'

/** What a step context holds of its attempt besides its recorded steps. */
export interface StepCoreOptions {
  secrets: SecretStore
  maxValueBytes: number
  /** The attempt's abort: once it fired (timeout, turn ended) no step starts. */
  abort?: AttemptSignal | undefined
  /** The tool's default retry policy of every step.do (durableTool's `retry`). */
  retry?: RetryPolicy | undefined
  /** The attempt's hold on its call: confirmed before each try of a step's fn. */
  hold?: AttemptHold | undefined
  /** The harness version the call began under: its questions record it. */
  version?: string | undefined
}

type WaitForEvent = (options: WaitForEventOptions<StandardSchemaV1 | undefined>) => Promise<unknown>

/** Where step.waitForEvent waits for its event (the event waits in Redis: waitForEvent.ts), over the core's recording of the wait. */
export interface EventWaitsOf {
  waitsFor(recording: WaitRecording): WaitForEvent
}

/** A wait for an event as the core records it; its address is checked and its id made by the event waits (waitForEvent.ts). */
interface WaitToRecord {
  name: string
  event: string
  key: string
  /** Set on a session-scoped wait: its record says so. */
  scope?: 'session' | undefined
  /** The id of the wait's address (log/eventAddress.ts), stored with its timeout: a woken call whose code waits elsewhere finds it. */
  addressId: string
  timeoutMs: number
}

type Recorded = { found: true; value: unknown } | { found: false }

/**
 * Takes the payload of a wait the new one stands in for (tool/movedWait.ts), given the new wait's
 * stored step (undefined while it has none): called before a new wait step is stored.
 */
export type TakeOver = (registered: WaitStepValue | undefined) => Promise<Recorded>

/** What a wait for an event records through the core (its rules: `recordWait`; a payload: `saveValue`). */
export interface WaitRecording {
  /**
   * The wait's recorded payload, else a payload `takeOver` took, else its timeout: its wait step
   * `harness.wait:<name>` → `{ until, ev }` with its `harness.tool.wait` record, stored once (a run
   * again keeps the timeout and the address it registered under).
   */
  recordWait(wait: WaitToRecord, takeOver?: TakeOver): Promise<{ found: true; value: unknown } | { found: false; until: number }>
  /** Whether this attempt already reached the step `name`: a wait it met this attempt has not moved. */
  met(name: string): boolean
  /** Records a value checked as a step value (R3, R4, R6) with its own record; resolves with the recorded one. */
  saveValue(name: string, value: unknown, what: string, record: (copy: unknown) => LogRecord): Promise<unknown>
  park(p: Park): never
  ours<T>(write: Promise<T>): Promise<T>
}

export interface DurableContextHandle {
  fields: DurableContextFields
  /** Waits for staged `append` writes; rethrows their failure (e.g. FencedError). Undefined when nothing was appended. */
  flush(): Promise<void> | undefined
  /** The park this attempt hit, if any, even if the tool caught it. */
  readonly parked: Park | null
  /**
   * The approval of a `needsApproval` call, asked once as a question of kind 'approval' (a step the
   * harness owns): resolves with the person's decision, parks until there is one, throws
   * QuestionExpiredError at `expiresAt`.
   */
  approval(message: string, expiresAt?: number): Promise<Approval>
  /** A write of ours that failed (after its retries), even if the tool caught it: the attempt must not land. */
  readonly failure: StorageError | null
}

const NOT_STORED: StepLookup = { found: false }
const noEventWaits: WaitForEvent = () => Promise.reject(new TypeError('step.waitForEvent: this step context has no event waits.'))

/** A person's decision on a `needsApproval` call: the answer `session.answer(id, value)` takes. */
const APPROVAL = z.object({ approved: z.boolean(), reason: z.string().max(2_000).optional() })
type Approval = z.infer<typeof APPROVAL>
/** The step of a `needsApproval` call's approval question. */
export const APPROVAL_STEP = `${RESERVED_PREFIX}approval`

/**
 * The rules of a durable tool's steps (R1–R9, R14, R16), over its call's recorded steps and nothing
 * else: `step.do` returns a recorded value without calling fn, else runs fn (under its retry policy)
 * and records its JSON copy before it resolves; sleeps, questions and event waits record what they
 * wait for once and park; `append` stages records for the landing.
 */
export function createStepCore(steps: RecordedSteps, options: StepCoreOptions, events?: EventWaitsOf): DurableContextHandle {
  const { secrets, maxValueBytes, hold } = options
  const { toolCallId } = steps
  const used = new Set<string>()
  let parked: Park | null = null
  let staging: Promise<void> = Promise.resolve()
  let appended = 0
  let stagingError: unknown = null
  let failure: StorageError | null = null
  /** Remembers a failed write of ours, so a tool that catches it cannot turn it into its own result or error. */
  const oursFailed = (error: unknown) => {
    if (error instanceof StorageError) failure ??= error
    return error
  }
  const ours = <T>(write: Promise<T>): Promise<T> =>
    write.catch((error: unknown) => {
      throw oursFailed(error)
    })

  const claim = (name: string) => {
    if (failure) throw failure
    if (hold?.lost) throw hold.lost
    if (parked) throw parked
    if (options.abort?.aborted) throw options.abort.reason
    if (typeof name !== 'string' || name.length === 0) throw new TypeError('A step needs a non-empty string name.')
    if (name.startsWith(RESERVED_PREFIX))
      throw new TypeError(`Step name "${name}" is reserved: names starting with "${RESERVED_PREFIX}" are the harness's own.`)
    // R6: names are stored as is (hash fields, log records); checked before anything quotes the name
    if (!secrets.empty)
      secrets.assertAbsent(JSON.stringify(name), 'A step name (step.do, sleep or ask)', 'Name steps by an id, never by a token.')
    if (used.has(name)) throw new DuplicateStepError(toolCallId, name)
    used.add(name)
  }
  const lookup = (name: string) => (steps.fresh ? Promise.resolve(NOT_STORED) : ours(steps.recorded(name)))
  /** The value's JSON copy and its JSON text (encoded once: the size check, R6's scan and the store share it). */
  const encodeValue = (value: unknown, what: string) => {
    const copy = toJsonCopy(value, what)
    const encoded = encodeChecked(copy, what, maxValueBytes)
    secrets.assertAbsent(encoded, what)
    return { copy, encoded }
  }
  const checkValue = (value: unknown, what: string) => encodeValue(value, what).copy
  const park = (p: Park): never => {
    parked = p
    throw p
  }

  /** Stores the value of a wait (sleep, an event's timeout) as a step, with its own log record, once. */
  const storeOnce = async (name: string, make: () => { value: unknown; record: LogRecord }) => {
    const stored = await lookup(name)
    if (stored.found) return stored.value
    const { value, record } = make()
    return (await ours(steps.record(name, value, record))).value
  }

  const step: Step = {
    do: (async (name: string, fn: (options: StepFnOptions) => unknown, stepOptions?: StepOptions) => {
      claim(name)
      const policy = policyOf(stepOptions?.retry, options.retry, name)
      const what = `Step "${name}" value`
      // with a policy, the lookup reads the step's retry state in the same round trip (R16)
      // a fresh attempt's lookup finds nothing: not awaited at all (a step's every await is a turn of the loop)
      const stored: StepLookup & { retry?: StepRetryState } = steps.fresh
        ? NOT_STORED
        : policy
          ? await ours(steps.recordedWithRetry(name))
          : await ours(steps.recorded(name))
      if (stored.found) {
        // R6 on replay too: a secret rotated into a stored value must not reach the tool unnoticed
        secrets.assertAbsent(stored.value === undefined ? undefined : JSON.stringify(stored.value), what)
        return stored.value
      }
      // R5: one key for every try and every run of the step
      const idempotencyKey = `${steps.logId}:${toolCallId}:${name}`
      // the fn's side effect starts only while this attempt holds its call (a lost one throws LockLostError)
      const run = () => {
        const traced = () => stepSpan(toolCallId, name, async () => (noteStepRun(idempotencyKey), fn({ idempotencyKey })))
        const held = hold?.confirm()
        return held ? ours(held).then(traced) : traced()
      }
      const state = stored.retry
      const value = policy
        ? await tryDurably({ steps, name, policy, secrets, signal: options.abort?.signal, state, park, ours }, run)
        : await run()
      const { copy, encoded } = encodeValue(value, what)
      if (appended > 0) await staging
      try {
        return (await steps.recordStep(name, copy, encoded)).value
      } catch (error) {
        throw oursFailed(error)
      }
    }) as Step['do'],
    async sleep(name, duration) {
      claim(name)
      const ms = parseDuration(duration)
      await sleepUntilStored(name, () => Date.now() + ms)
    },
    async sleepUntil(name, at) {
      claim(name)
      const wakeAt = parseWakeTime(at)
      await sleepUntilStored(name, () => wakeAt)
    },
    ask: (askOptions) => {
      claim(askOptions.name)
      return ask(askOptions)
    },
    // the payload comes back as the schema's output, checked by it (or unknown, with none)
    waitForEvent: ((waitOptions: WaitForEventOptions<StandardSchemaV1 | undefined>) => {
      claim(waitOptions.name)
      // made on the first wait: most attempts wait for no event
      waitForEvent ??= events ? events.waitsFor(waitRecording()) : noEventWaits
      return waitForEvent(waitOptions)
    }) as Step['waitForEvent'],
  }

  // R7: the wake time is logged once; a run again reads it back and never restarts the timer
  async function sleepUntilStored(name: string, wakeAt: () => number) {
    const stored = (await storeOnce(name, () => {
      const at = wakeAt()
      return { value: { wakeAt: at }, record: { type: 'harness.tool.sleep', toolCallId, name, wakeAt: at } }
    })) as { wakeAt: number }
    if (Date.now() < stored.wakeAt) park(new Park('sleep', stored.wakeAt, name))
  }

  const ask = createAsk({ steps, lookup, park, checkValue, ours, ...(options.version ? { version: options.version } : {}) })
  let waitForEvent: WaitForEvent | undefined
  const waitRecording = (): WaitRecording => ({
    async recordWait({ name, event, key, scope, addressId, timeoutMs }, takeOver) {
      const stored = await lookup(name)
      if (stored.found) return stored
      const waitStep = `${WAIT_STEP_PREFIX}${name}`
      const found = await lookup(waitStep)
      const registered = found.found ? waitStepValueOf(found.value) : undefined
      // before a new wait step is stored: a crash while a payload moves finds the old wait again
      const moved = takeOver ? await takeOver(registered) : undefined
      if (moved?.found) return moved
      if (registered) return { found: false, until: registered.until }
      const at = Date.now() + timeoutMs
      const record: LogRecord = { type: 'harness.tool.wait', toolCallId, name, event, key, until: at, ...(scope ? { scope } : {}) }
      const value: WaitStepValue = { until: at, ev: addressId }
      // a lost race keeps the wait step stored first
      return { found: false, until: waitStepValueOf((await ours(steps.record(waitStep, value, record))).value).until }
    },
    met: (name) => used.has(name),
    async saveValue(name, value, what, record) {
      const { copy, encoded } = encodeValue(value, what)
      await staging
      return (await ours(steps.record(name, copy, record(copy), encoded))).value
    },
    park,
    ours,
  })

  const append = (records: AppendRecord[]) => {
    if (hold?.lost) throw hold.lost
    if (parked) throw parked
    if (!Array.isArray(records)) throw new TypeError('append takes an array of records: append([{ type: "app.x", ... }]).')
    const checked = records.map((record, i) => {
      const type: unknown = record?.type
      if (typeof type !== 'string' || type.length === 0 || type.startsWith(RESERVED_PREFIX)) throw new ReservedRecordTypeError(type)
      return checkValue(record, `append record [${i}] (${type})`) as LogRecord
    })
    if (checked.length === 0) return
    const first = appended
    appended += checked.length
    // Durable at once (fenced), so a cut 'never' call still lands them with its error (R9, R10).
    staging = staging
      .then(() => ours(steps.stage(checked, first)))
      .catch((error) => {
        stagingError ??= error
      })
  }

  return {
    fields: { step, append, secrets, tools: NO_CHILD_TOOLS, agents: NO_CHILD_AGENTS, budget: async () => [] },
    approval(message, expiresAt) {
      if (parked) throw parked
      return ask({ name: APPROVAL_STEP, message, schema: APPROVAL, ...(expiresAt === undefined ? {} : { expiresAt }) }, 'approval')
    },
    flush() {
      if (appended === 0) return undefined
      return staging.then(() => {
        if (stagingError) throw stagingError
      })
    },
    get parked() {
      return parked
    },
    get failure() {
      return failure
    },
  }
}
