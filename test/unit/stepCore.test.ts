// The rules of a durable tool's steps (src/tool/stepCore.ts) over a map of recorded steps, without
// Redis: the same rules run over the session log's call ledger in test/integration/steps.test.ts,
// sleepAsk.test.ts, stepRetries.test.ts and machineEvents.test.ts. A "run again" here is a new step
// core over the same recorded steps, as a new attempt of the call reads them after a crash.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import {
  DuplicateStepError,
  InvalidAnswerError,
  InvalidDurationError,
  NotJsonError,
  QuestionExpiredError,
  ReservedRecordTypeError,
  SecretInValueError,
  StepRetriesExhaustedError,
  ValueTooLargeError,
} from '../../src/errors/index.js'
import type { LogRecord, Question, StepLookup, StepRetryState } from '../../src/log/index.js'
import { RESERVED_PREFIX } from '../../src/log/index.js'
import { Park } from '../../src/tool/park.js'
import type { RecordedSteps } from '../../src/tool/recordedSteps.js'
import type { RetryPolicy } from '../../src/tool/retry.js'
import { SecretStore } from '../../src/tool/secrets.js'
import { createStepCore, type StepCoreOptions, type WaitRecording } from '../../src/tool/stepCore.js'
import { RESERVED_PREFIX as CORE_RESERVED_PREFIX } from '../../src/core/index.js'

const DAY = 86_400_000
let seq = 0

/** A call's recorded steps in a map, recorded as the call ledger records them: the first value wins. */
class MapSteps implements RecordedSteps {
  readonly logId = 'log-1'
  readonly toolCallId = 'call-1'
  fresh = true
  readonly values = new Map<string, unknown>()
  readonly retries = new Map<string, StepRetryState>()
  readonly records: LogRecord[] = []
  readonly questions = new Map<string, { question: Question; answer: StepLookup }>()
  readonly staged: LogRecord[] = []
  writes = 0

  /** A new attempt's view of these steps (a run again after a crash or a wake-up). */
  again(): this {
    this.fresh = false
    return this
  }
  async recorded(name: string): Promise<StepLookup> {
    return this.values.has(name) ? { found: true, value: this.values.get(name) } : { found: false }
  }
  async recordedWithRetry(name: string) {
    const stored = await this.recorded(name)
    const retry = this.retries.get(name)
    return stored.found || !retry ? stored : { found: false as const, retry }
  }
  async recordStep(name: string, copy: unknown, encoded: string | undefined) {
    expect(encoded).toBe(copy === undefined ? undefined : JSON.stringify(copy))
    return this.record(name, copy, {
      type: 'harness.tool.step',
      toolCallId: this.toolCallId,
      name,
      ...(copy === undefined ? {} : { value: copy }),
    })
  }
  async record(name: string, value: unknown, record: LogRecord) {
    this.writes++
    if (this.values.has(name)) return { value: this.values.get(name) }
    this.values.set(name, value)
    this.records.push(record)
    return { value }
  }
  async recordRetry(name: string, state: StepRetryState, record: LogRecord) {
    this.writes++
    this.retries.set(name, state)
    this.records.push(record)
  }
  async recordQuestion(name: string, question: Question) {
    this.writes++
    if (this.values.has(name)) return
    this.values.set(name, { questionId: question.questionId })
    this.questions.set(question.questionId, { question, answer: { found: false } })
    this.records.push({ type: 'harness.tool.ask', ...question })
  }
  async question(questionId: string) {
    return this.questions.get(questionId) ?? null
  }
  async stage(records: LogRecord[], first: number) {
    records.forEach((record, i) => (this.staged[first + i] ??= record))
  }
}

const coreOver = (steps: MapSteps, options: Partial<StepCoreOptions> = {}) =>
  createStepCore(steps, { secrets: new SecretStore(), maxValueBytes: 1024, ...options })
const fields = (steps: MapSteps, options: Partial<StepCoreOptions> = {}) => coreOver(steps, options).fields
const parkOf = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.fail('expected a park'),
    (error: unknown) => (expect(error).toBeInstanceOf(Park), error as Park),
  )

afterEach(() => {
  vi.useRealTimers()
})

describe('step.do', () => {
  it('R1: a finished step returns its recorded value and fn is not called', async () => {
    const steps = new MapSteps()
    expect(await fields(steps).step.do('charge', () => ({ id: 'ch_1' }))).toEqual({ id: 'ch_1' })
    // recorded before step.do resolved
    expect(steps.values.get('charge')).toEqual({ id: 'ch_1' })
    const fn = vi.fn(() => ({ id: 'ch_2' }))
    expect(await fields(steps.again()).step.do('charge', fn)).toEqual({ id: 'ch_1' })
    expect(fn).not.toHaveBeenCalled()
    expect(steps.records.filter((r) => r.type === 'harness.tool.step')).toHaveLength(1)
  })

  it('R2: the same name twice in one call throws, across step kinds; another call may reuse it', async () => {
    const steps = new MapSteps()
    const { step } = fields(steps)
    await step.do('a', () => 1)
    await expect(step.do('a', () => 2)).rejects.toBeInstanceOf(DuplicateStepError)
    await expect(step.sleep('a', 0)).rejects.toBeInstanceOf(DuplicateStepError)
    expect(await fields(steps.again()).step.do('a', () => 3)).toBe(1)
  })

  it('R3: the first run returns the JSON copy, as a run again reads it back', async () => {
    const steps = new MapSteps()
    const value = { a: 1, gone: undefined, list: [1, undefined] }
    const first = await fields(steps).step.do('v', () => value)
    expect(first).toEqual({ a: 1, list: [1, null] })
    expect(first).not.toBe(value)
    expect(await fields(steps.again()).step.do('v', () => value)).toEqual(first)
  })

  it.each([
    ['a Date', () => new Date()],
    ['a Map', () => new Map()],
    ['a Set', () => new Set()],
    ['NaN', () => ({ n: NaN })],
    ['a BigInt', () => ({ n: 1n })],
    ['a function', () => ({ f: () => 1 })],
    ['a cycle', () => { const o: Record<string, unknown> = {}; o.self = o; return o }], // prettier-ignore
  ])('R3: %s throws NotJsonError and records nothing', async (_, make) => {
    const steps = new MapSteps()
    await expect(fields(steps).step.do('v', make as () => never)).rejects.toBeInstanceOf(NotJsonError)
    expect(steps.values.size).toBe(0)
  })

  it('R3: a void step is allowed and replays as undefined without calling fn', async () => {
    const steps = new MapSteps()
    expect(await fields(steps).step.do('notify', () => {})).toBeUndefined()
    expect(steps.values.has('notify')).toBe(true)
    const fn = vi.fn()
    expect(await fields(steps.again()).step.do('notify', fn)).toBeUndefined()
    expect(fn).not.toHaveBeenCalled()
  })

  it('R4: a value over maxValueBytes throws ValueTooLargeError and records nothing', async () => {
    const steps = new MapSteps()
    await expect(fields(steps, { maxValueBytes: 16 }).step.do('big', () => 'x'.repeat(64))).rejects.toBeInstanceOf(ValueTooLargeError)
    expect(steps.values.size).toBe(0)
    expect(await fields(steps, { maxValueBytes: 16 }).step.do('small', () => 'x'.repeat(8))).toBe('xxxxxxxx')
  })

  it('R5: the idempotency key is `${logId}:${toolCallId}:${name}` on every run', async () => {
    const steps = new MapSteps()
    const keys: string[] = []
    await expect(
      fields(steps).step.do('pay', ({ idempotencyKey }) => {
        keys.push(idempotencyKey)
        throw new Error('card network down')
      }),
    ).rejects.toThrow('card network down')
    await fields(steps.again()).step.do('pay', ({ idempotencyKey }) => (keys.push(idempotencyKey), 'ok'))
    expect(keys).toEqual(['log-1:call-1:pay', 'log-1:call-1:pay'])
  })

  it('R6: a value holding a session secret throws on the first run and on replay; so does a name', async () => {
    const secrets = new SecretStore({ apiKey: 'sk_live_abcdefghijkl' })
    const steps = new MapSteps()
    await expect(fields(steps, { secrets }).step.do('leak', () => ({ auth: 'Bearer sk_live_abcdefghijkl' }))).rejects.toBeInstanceOf(
      SecretInValueError,
    )
    expect(steps.values.size).toBe(0)
    // a secret rotated into a value recorded before it was one
    steps.values.set('old', { token: 'sk_live_abcdefghijkl' })
    const fn = vi.fn()
    await expect(fields(steps.again(), { secrets }).step.do('old', fn)).rejects.toBeInstanceOf(SecretInValueError)
    expect(fn).not.toHaveBeenCalled()
    await expect(fields(steps, { secrets }).step.do('sk_live_abcdefghijkl', () => 1)).rejects.toBeInstanceOf(SecretInValueError)
  })

  it('a step name starting with harness. is refused', async () => {
    expect(CORE_RESERVED_PREFIX).toBe(RESERVED_PREFIX)
    await expect(fields(new MapSteps()).step.do('harness.x', () => 1)).rejects.toThrow(/reserved/)
  })
})

describe('step.sleep and step.sleepUntil', () => {
  it('R7: the wake time is recorded once; a run again never restarts the timer', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 })
    const steps = new MapSteps()
    const first = await parkOf(fields(steps).step.sleep('wait', '1h'))
    expect(first.until).toBe(1_000_000 + 3_600_000)
    expect(steps.records).toEqual([{ type: 'harness.tool.sleep', toolCallId: 'call-1', name: 'wait', wakeAt: first.until }])
    const writes = steps.writes
    vi.setSystemTime(1_000_000 + 1_800_000)
    const again = await parkOf(fields(steps.again()).step.sleep('wait', '1h'))
    expect(again.until).toBe(first.until)
    // read back, not written again
    expect(steps.writes).toBe(writes)
    vi.setSystemTime(first.until)
    await fields(steps.again()).step.sleep('wait', '1h')
    expect(steps.records).toHaveLength(1)
  })

  it('R7: a sleep over 365 days throws InvalidDurationError; sleepUntil a past time does not park', async () => {
    const { step } = fields(new MapSteps())
    await expect(step.sleep('long', 366 * DAY)).rejects.toBeInstanceOf(InvalidDurationError)
    await expect(step.sleepUntil('far', Date.now() + 366 * DAY)).rejects.toBeInstanceOf(InvalidDurationError)
    await step.sleepUntil('past', Date.now() - 1)
  })

  it('R14: a park is not a crash: it is remembered, even if the tool catches it, and no write failed', async () => {
    const steps = new MapSteps()
    const core = coreOver(steps)
    const park = await parkOf(core.fields.step.sleep('nap', '1d'))
    expect(park.kind).toBe('sleep')
    expect(core.parked).toBe(park)
    expect(core.failure).toBeNull()
    const fn = vi.fn()
    await expect(core.fields.step.do('after', fn)).rejects.toBe(park)
    expect(() => core.fields.append([{ type: 'app.x' }])).toThrow(park)
    expect(fn).not.toHaveBeenCalled()
  })
})

describe('step.do with a retry policy', () => {
  const failing = () => {
    const keys: string[] = []
    const fn = vi.fn(({ idempotencyKey }: { idempotencyKey: string }) => {
      keys.push(idempotencyKey)
      throw new Error('declined')
    })
    return { fn, keys }
  }

  it('R16: a retry never changes the idempotency key; the tries are recorded', async () => {
    const steps = new MapSteps()
    const { fn, keys } = failing()
    const retry: RetryPolicy = { attempts: 3, delay: 1, backoff: 'constant' }
    await expect(fields(steps, { retry }).step.do('pay', fn)).rejects.toBeInstanceOf(StepRetriesExhaustedError)
    expect(keys).toEqual(Array(3).fill('log-1:call-1:pay'))
    expect(steps.records.map((r) => ('attempt' in r ? r.attempt : r.type))).toEqual([1, 2, 3])
    expect(steps.retries.get('pay')).toMatchObject({ a: 3, x: 'exhausted', m: 'declined' })
  })

  it('R16: a crash never resets the try count or the next time; an end of the tries is thrown again, fn not called', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 5_000_000 })
    const steps = new MapSteps()
    const { fn } = failing()
    const retry: RetryPolicy = { attempts: 2, delay: '1m' }
    // the first try fails: its count and next time are recorded, then the call parks (a long wait)
    const park = await parkOf(fields(steps, { retry }).step.do('pay', fn))
    expect(park.kind).toBe('retry')
    expect(steps.retries.get('pay')).toEqual({ a: 1, m: 'declined', c: 'Error', n: 5_000_000 + 60_000 })
    // a crash, a run again before the next time: it parks until the same time, fn is not called
    vi.setSystemTime(5_000_000 + 10_000)
    expect((await parkOf(fields(steps.again(), { retry }).step.do('pay', fn))).until).toBe(5_000_000 + 60_000)
    expect(fn).toHaveBeenCalledTimes(1)
    // at the next time: the second try is try 2 (not 1 again), the last one
    vi.setSystemTime(5_000_000 + 60_000)
    await expect(fields(steps.again(), { retry }).step.do('pay', fn)).rejects.toBeInstanceOf(StepRetriesExhaustedError)
    expect(fn).toHaveBeenCalledTimes(2)
    expect(steps.retries.get('pay')).toMatchObject({ a: 2, x: 'exhausted' })
    await expect(fields(steps.again(), { retry }).step.do('pay', fn)).rejects.toBeInstanceOf(StepRetriesExhaustedError)
    expect(fn).toHaveBeenCalledTimes(2)
  })
})

describe('step.ask', () => {
  const schema = z.object({ ok: z.boolean() })

  it('records the question once; parks until an answer, which the schema checks', async () => {
    const steps = new MapSteps()
    const ask = { name: 'confirm', message: 'Ship it?', schema }
    expect((await parkOf(fields(steps).step.ask(ask))).kind).toBe('ask')
    expect((await parkOf(fields(steps.again()).step.ask(ask))).kind).toBe('ask')
    expect(steps.records.filter((r) => r.type === 'harness.tool.ask')).toHaveLength(1)
    const [entry] = steps.questions.values()
    entry!.answer = { found: true, value: { ok: 'yes' } }
    await expect(fields(steps.again()).step.ask(ask)).rejects.toBeInstanceOf(InvalidAnswerError)
    entry!.answer = { found: true, value: { ok: true } }
    expect(await fields(steps.again()).step.ask(ask)).toEqual({ ok: true })
  })

  it('throws QuestionExpiredError past expiresAt; a message holding a secret throws before any write', async () => {
    const steps = new MapSteps()
    await expect(fields(steps).step.ask({ name: 'late', message: 'm', schema, expiresAt: Date.now() - 1 })).rejects.toBeInstanceOf(
      QuestionExpiredError,
    )
    const secrets = new SecretStore({ key: 'sk_live_abcdefghijkl' })
    const writes = steps.writes
    await expect(fields(steps, { secrets }).step.ask({ name: 'q', message: 'key sk_live_abcdefghijkl', schema })).rejects.toBeInstanceOf(
      SecretInValueError,
    )
    expect(steps.writes).toBe(writes)
  })
})

describe('step.waitForEvent (its recording)', () => {
  /** The core's recording of a wait, as the event waits (waitForEvent.ts) get it. */
  const recordingOf = (steps: MapSteps, options: Partial<StepCoreOptions> = {}) => {
    let recording: WaitRecording | undefined
    const events = { waitsFor: (r: WaitRecording) => ((recording = r), async () => undefined) }
    const core = createStepCore(steps, { secrets: new SecretStore(), maxValueBytes: 1024, ...options }, events)
    void core.fields.step.waitForEvent({ name: `w${seq++}`, event: 'e', key: 'k', timeout: '1m' })
    return recording!
  }

  const paid = { name: 'paid', event: 'payment.settled', key: 'order-1', addressId: 'addr-1', timeoutMs: 60_000 }

  it('the timeout and the address id are recorded once as the wait step { until, ev }; a run again keeps them', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 2_000_000 })
    const steps = new MapSteps()
    expect(await recordingOf(steps).recordWait(paid)).toEqual({ found: false, until: 2_060_000 })
    vi.setSystemTime(2_030_000)
    // a run again (a later code) waiting elsewhere keeps the wait step as it was stored
    expect(await recordingOf(steps.again()).recordWait({ ...paid, addressId: 'addr-2', timeoutMs: 1_000 })).toEqual({
      found: false,
      until: 2_060_000,
    })
    expect(steps.records).toEqual([
      { type: 'harness.tool.wait', toolCallId: 'call-1', name: 'paid', event: 'payment.settled', key: 'order-1', until: 2_060_000 },
    ])
    expect([...steps.values]).toEqual([['harness.wait:paid', { until: 2_060_000, ev: 'addr-1' }]])
  })

  it('a session-scoped wait says so in its record', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 2_000_000 })
    const steps = new MapSteps()
    await recordingOf(steps).recordWait({ ...paid, scope: 'session' })
    expect(steps.records).toEqual([
      {
        type: 'harness.tool.wait',
        toolCallId: 'call-1',
        name: 'paid',
        event: 'payment.settled',
        key: 'order-1',
        until: 2_060_000,
        scope: 'session',
      },
    ])
  })

  it("the take-over sees the stored wait step and runs before a new one is stored; a payload it took is the wait's", async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 2_000_000 })
    const steps = new MapSteps()
    const seen: unknown[] = []
    const none = async (registered: unknown) => (seen.push([registered, [...steps.values.keys()]]), { found: false as const })
    await recordingOf(steps).recordWait(paid, none)
    await recordingOf(steps.again()).recordWait(paid, none)
    expect(seen).toEqual([
      [undefined, []],
      [{ until: 2_060_000, ev: 'addr-1' }, ['harness.wait:paid']],
    ])
    const other = new MapSteps().again()
    expect(await recordingOf(other).recordWait(paid, async () => ({ found: true, value: { amount: 5 } }))).toEqual({
      found: true,
      value: { amount: 5 },
    })
    expect(other.values.size).toBe(0)
  })

  it('met: the steps this attempt reached', () => {
    const recording = recordingOf(new MapSteps())
    expect(recording.met(`w${seq - 1}`)).toBe(true)
    expect(recording.met('other')).toBe(false)
  })

  it('a payload is recorded as the step, checked as a step value; a recorded payload comes back', async () => {
    const steps = new MapSteps()
    const secrets = new SecretStore({ key: 'sk_live_abcdefghijkl' })
    const record = (copy: unknown): LogRecord => ({ type: 'harness.tool.event', toolCallId: 'call-1', name: 'paid', payload: copy })
    const recording = recordingOf(steps, { secrets })
    await expect(recording.saveValue('paid', { card: 'sk_live_abcdefghijkl' }, 'payload', record)).rejects.toBeInstanceOf(
      SecretInValueError,
    )
    await expect(recording.saveValue('paid', { at: new Date() }, 'payload', record)).rejects.toBeInstanceOf(NotJsonError)
    expect(await recording.saveValue('paid', { amount: 5, gone: undefined }, 'payload', record)).toEqual({ amount: 5 })
    expect(await recordingOf(steps.again()).recordWait(paid)).toEqual({
      found: true,
      value: { amount: 5 },
    })
  })
})

describe('append', () => {
  it('R9: a record type starting with harness. throws; others are staged by position for the landing', async () => {
    const steps = new MapSteps()
    const core = coreOver(steps)
    expect(() => core.fields.append([{ type: 'harness.tool.result' }])).toThrow(ReservedRecordTypeError)
    expect(() => core.fields.append([{ type: '' }])).toThrow(ReservedRecordTypeError)
    expect(core.flush()).toBeUndefined()
    core.fields.append([{ type: 'app.a', n: 1 }])
    core.fields.append([{ type: 'app.b', at: undefined }])
    await core.flush()
    expect(steps.staged).toEqual([{ type: 'app.a', n: 1 }, { type: 'app.b' }])
  })
})

describe('the step core stands apart from Redis', () => {
  it('its modules import log/ for types only (the Redis side is durableContext.ts and waitForEvent.ts)', () => {
    const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'tool')
    const valueImports = ['stepCore.ts', 'recordedSteps.ts', 'ask.ts', 'stepRetry.ts'].flatMap((file) =>
      [...readFileSync(join(dir, file), 'utf8').matchAll(/^import (?!type )(?:\{[^}]*\}|[^\n{]*?) from '(\.\.\/log\/[^']*)'/gm)].map(
        (m) => `${file}: ${m[1]}`,
      ),
    )
    expect(valueImports).toEqual([])
  })
})
