// durableTool steps over real Redis (R1–R6, R9, the option part of R10). Most tests drive the durable
// context directly, as a tool job does (begin → durable execute), and simulate a crash by throwing
// from the tool or abandoning the attempt, then begin again (new epoch) and run the execute again.
// The last block runs tools through a host with in-process workers (session.runTool).
import { randomUUID } from 'node:crypto'
import { toolDefinition } from '@tanstack/ai'
import type { RedisClient } from '../../src/index.js'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createHarnessHost,
  defineHarness,
  durableTool,
  ToolCallError,
  withReplay,
  type DurableToolContext,
  type HarnessHost,
  type Session,
  type WorkersHandle,
} from '../../src/index.js'
import {
  ConfigError,
  DuplicateStepError,
  FencedError,
  NotJsonError,
  ReservedRecordTypeError,
  SecretInValueError,
  ValueTooLargeError,
} from '../../src/errors/index.js'
import { DEFAULT_DURABILITY } from '../../src/harness/defineHarness.js'
import { SessionLog, type LogRecord } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { createDurableContext, DURABLE, replayOf, SecretStore, type DurableContextHandle } from '../../src/tool/index.js'
import { dumpPrefix } from '../helpers/dump.js'
import { getRedisUrl, uniquePrefix, rigClient } from '../rig.js'
import { patient } from '../helpers/patience.js'

let url: string
let redis: RedisClient

beforeAll(async () => {
  url = await getRedisUrl()
  redis = rigClient(url)
})

afterAll(() => {
  redis?.disconnect()
})

class Crash extends Error {
  constructor() {
    super('simulated crash')
  }
}

function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

type AnyDurableTool = { name: string } & {
  [DURABLE]: { execute: (args: unknown, context: DurableToolContext) => unknown; replay: 'safe' | 'never' }
}

/** A durable tool with no input, for tests that only look at its steps. */
function probe(name: string, execute: (context: DurableToolContext) => Promise<unknown>, options?: { replay: 'safe' | 'never' }) {
  return durableTool(toolDefinition({ name, description: name, inputSchema: z.object({}) }), (_input, context) => execute(context), options)
}

function newLog(prefix: string): SessionLog {
  return new SessionLog(redis, prefix, `s-${randomUUID().slice(0, 8)}`)
}

interface Attempt {
  begin: Awaited<ReturnType<SessionLog['calls']['beginCall']>>
  handle: DurableContextHandle
  run: Promise<unknown>
}

/** One attempt of a call, as the tool job makes it: begin (new fencing epoch), then the durable execute. */
async function attempt(
  log: SessionLog,
  tool: AnyDurableTool,
  toolCallId: string,
  input: unknown = {},
  options: { secrets?: SecretStore; maxValueBytes?: number } = {},
): Promise<Attempt> {
  const begin = await log.calls.beginCall(toolCallId, tool.name, replayOf(tool))
  const handle = createDurableContext({
    log,
    fence: { toolCallId, epoch: begin.epoch },
    secrets: options.secrets ?? new SecretStore(),
    maxValueBytes: options.maxValueBytes ?? DEFAULT_DURABILITY.maxValueBytes,
    fresh: begin.kind === 'fresh',
  })
  const abortSignal = new AbortController().signal
  const run = (async () => tool[DURABLE].execute(input, { toolCallId, abortSignal, context: undefined, ...handle.fields }))()
  // a test that only awaits part of the attempt must not leave an unhandled rejection behind
  run.catch(() => {})
  return { begin, handle, run }
}

/** Records of the log as stored: raw XRANGE, each entry's JSON. */
async function rawRecords(log: SessionLog): Promise<Array<LogRecord & Record<string, unknown>>> {
  const entries = (await redis.xrange(log.stream.keys.log, '-', '+')) as Array<[string, string[]]>
  return entries.map(([, fields]) => JSON.parse(fields[1]!))
}

async function stepRecords(log: SessionLog, toolCallId: string) {
  return (await rawRecords(log)).filter((r) => r.type === 'harness.tool.step' && r.toolCallId === toolCallId)
}

// ---- secrets (R6) ----

// base64 of this secret has '+', '/' and padding, so raw, base64, base64url and URL-encoded all differ
const SECRET = 'sk_live_>>>?~"q\\üx'
const SECRET_FORMS = {
  raw: SECRET,
  base64: Buffer.from(SECRET).toString('base64'),
  base64url: Buffer.from(SECRET).toString('base64url'),
  urlEncoded: encodeURIComponent(SECRET),
}
/** Every form the secret could take in stored text: also JSON-escaped and base64 without padding. */
const STORED_FORMS = [...Object.values(SECRET_FORMS), JSON.stringify(SECRET).slice(1, -1), SECRET_FORMS.base64.replace(/=+$/, '')]

async function expectNoSecretStored(prefix: string, marker: string): Promise<void> {
  const dump = await dumpPrefix(redis, url, prefix)
  // the scan did read the test's values: a value stored next to the secret is there
  expect(dump).toContain(marker)
  for (const form of STORED_FORMS) expect(dump).not.toContain(form)
}

// ---- the page's checkout, with a billing that records each call's idempotency key ----

function makeBilling() {
  const charges: string[] = []
  const invoices: string[] = []
  return {
    charges,
    invoices,
    async charge(orderId: string, idempotencyKey: string) {
      charges.push(idempotencyKey)
      return { id: `ch_${orderId}` }
    },
    async sendInvoice(_chargeId: string, idempotencyKey: string) {
      invoices.push(idempotencyKey)
    },
  }
}

describe('durable steps, driven directly', () => {
  const prefix = uniquePrefix('steps')

  it('R1: a finished step is in the log before step.do resolves; a run again returns it without calling fn', async () => {
    const log = newLog(prefix)
    let fnCalls = 0
    let crash = true
    let seenAfterAwait: { records: unknown[]; stored: unknown } | undefined
    const tool = probe('mint', async ({ step, toolCallId }) => {
      const minted = await step.do('mint', () => {
        fnCalls++
        return { token: randomUUID(), n: fnCalls }
      })
      // the moment step.do resolved: what does the log hold?
      if (!seenAfterAwait) {
        seenAfterAwait = { records: await stepRecords(log, toolCallId), stored: await log.calls.getStep(toolCallId, 'mint') }
      }
      if (crash) throw new Crash()
      return minted
    })

    const first = await attempt(log, tool, 'call-1')
    expect(first.begin.kind).toBe('fresh')
    await expect(first.run).rejects.toBeInstanceOf(Crash)
    expect(fnCalls).toBe(1)
    const firstValue = (await log.calls.getStep('call-1', 'mint')) as { found: true; value: { token: string; n: number } }
    expect(firstValue.found).toBe(true)
    expect(seenAfterAwait!.records).toEqual([{ type: 'harness.tool.step', toolCallId: 'call-1', name: 'mint', value: firstValue.value }])
    expect(seenAfterAwait!.stored).toEqual(firstValue)

    crash = false
    const again = await attempt(log, tool, 'call-1')
    expect(again.begin).toMatchObject({ kind: 'rerun', epoch: first.begin.epoch + 1, attempt: 2 })
    expect(await again.run).toStrictEqual(firstValue.value)
    expect(fnCalls).toBe(1)
    expect(await stepRecords(log, 'call-1')).toHaveLength(1)
  })

  it("R1, R5: the page's checkout cut between charge and sendInvoice charges once and invoices once", async () => {
    const log = newLog(prefix)
    const billing = makeBilling()
    let crashBetweenSteps = true
    // the page's checkout; fn passes its idempotencyKey on to billing, as the page advises
    const checkout = durableTool(
      toolDefinition({
        name: 'checkout',
        description: 'Charge an order and send the invoice',
        inputSchema: z.object({ orderId: z.string() }),
      }),
      async ({ orderId }, { step }) => {
        const payment = await step.do(`charge:${orderId}`, ({ idempotencyKey }) => billing.charge(orderId, idempotencyKey))
        if (crashBetweenSteps) throw new Crash()
        await step.do(`invoice:${payment.id}`, ({ idempotencyKey }) => billing.sendInvoice(payment.id, idempotencyKey))
        return { chargeId: payment.id }
      },
    )

    const first = await attempt(log, checkout, 'call-42', { orderId: '42' })
    await expect(first.run).rejects.toBeInstanceOf(Crash)
    expect(billing.charges).toHaveLength(1)
    expect(billing.invoices).toHaveLength(0)

    crashBetweenSteps = false
    const again = await attempt(log, checkout, 'call-42', { orderId: '42' })
    expect(again.begin.kind).toBe('rerun')
    expect(await again.run).toEqual({ chargeId: 'ch_42' })
    expect(billing.charges).toEqual([`${log.sessionId}:call-42:charge:42`])
    expect(billing.invoices).toEqual([`${log.sessionId}:call-42:invoice:ch_42`])
    expect(log.stream.logId).toBe(log.sessionId)

    // a third run (e.g. a crash before the result landed) runs no side effect at all
    const third = await attempt(log, checkout, 'call-42', { orderId: '42' })
    expect(await third.run).toEqual({ chargeId: 'ch_42' })
    expect(billing.charges).toHaveLength(1)
    expect(billing.invoices).toHaveLength(1)
    expect((await stepRecords(log, 'call-42')).map((r) => r.name)).toEqual(['charge:42', 'invoice:ch_42'])
  })

  it('R5: a step cut after fn ran and before its value was stored runs again with the same idempotency key', async () => {
    const log = newLog(prefix)
    // a payment system that refuses the second charge with a key it has seen (returns the first one)
    const seen = new Map<string, { id: string }>()
    const keys: string[] = []
    let effects = 0
    const hold = deferred()
    let attemptNo = 0
    const checkout = durableTool(
      toolDefinition({ name: 'checkout', description: 'Charge', inputSchema: z.object({ orderId: z.string() }) }),
      async ({ orderId }, { step }) => {
        const thisAttempt = ++attemptNo
        const payment = await step.do(`charge:${orderId}`, async ({ idempotencyKey }) => {
          keys.push(idempotencyKey)
          if (!seen.has(idempotencyKey)) {
            effects++
            seen.set(idempotencyKey, { id: `ch_${orderId}` })
          }
          // the first attempt is cut here: fn has ended its side effect, its value is not stored yet
          if (thisAttempt === 1) await hold.promise
          return { ...seen.get(idempotencyKey)!, attempt: thisAttempt }
        })
        return payment
      },
    )

    const first = await attempt(log, checkout, 'call-7', { orderId: '7' })
    await waitFor(async () => keys.length === 1, 'the first attempt to run fn')
    // the worker is gone; the call is picked up again
    const again = await attempt(log, checkout, 'call-7', { orderId: '7' })
    expect(again.begin.kind).toBe('rerun')
    expect(await again.run).toEqual({ id: 'ch_7', attempt: 2 })
    expect(keys).toEqual([`${log.sessionId}:call-7:charge:7`, `${log.sessionId}:call-7:charge:7`])
    expect(effects).toBe(1)

    // the cut attempt wakes up late: its write is fenced and the stored value stays
    hold.resolve()
    await expect(first.run).rejects.toBeInstanceOf(FencedError)
    expect(await log.calls.getStep('call-7', 'charge:7')).toEqual({ found: true, value: { id: 'ch_7', attempt: 2 } })
    expect(await stepRecords(log, 'call-7')).toHaveLength(1)

    // another call gets another key for the same step name
    const other = await attempt(log, checkout, 'call-8', { orderId: '7' })
    await other.run
    expect(keys[2]).toBe(`${log.sessionId}:call-8:charge:7`)
    expect(effects).toBe(2)
  })

  it('R2: the same step name twice in one tool call throws DuplicateStepError before fn runs', async () => {
    const log = newLog(prefix)
    let secondFnCalls = 0
    let crash = true
    const errors: unknown[] = []
    const tool = probe('twice', async ({ step }) => {
      await step.do('a', () => 1)
      await step.do('a', () => ++secondFnCalls).catch((e) => errors.push(e))
      await step.sleep('a', 0).catch((e) => errors.push(e))
      await step.do('b', () => 2)
      if (crash) throw new Crash()
      return 'ok'
    })
    const first = await attempt(log, tool, 'call-dup')
    await expect(first.run).rejects.toBeInstanceOf(Crash)
    crash = false
    // on a run again too, where 'a' replays from the log
    const again = await attempt(log, tool, 'call-dup')
    expect(await again.run).toBe('ok')

    expect(secondFnCalls).toBe(0)
    expect(errors).toHaveLength(4)
    for (const error of errors) {
      expect(error).toBeInstanceOf(DuplicateStepError)
      expect((error as Error).message).toContain('Step "a" is used twice in tool call call-dup')
    }
    expect((await stepRecords(log, 'call-dup')).map((r) => r.name)).toEqual(['a', 'b'])
  })

  it('R2: the same step name in two different tool calls is fine', async () => {
    const log = newLog(prefix)
    let fnCalls = 0
    const tool = probe('shared', async ({ step, toolCallId }) => step.do('a', () => ({ call: toolCallId, n: ++fnCalls })))
    const one = await attempt(log, tool, 'call-one')
    const two = await attempt(log, tool, 'call-two')
    expect(await one.run).toEqual({ call: 'call-one', n: 1 })
    expect(await two.run).toEqual({ call: 'call-two', n: 2 })
    expect(await log.calls.getStep('call-one', 'a')).toEqual({ found: true, value: { call: 'call-one', n: 1 } })
    expect(await log.calls.getStep('call-two', 'a')).toEqual({ found: true, value: { call: 'call-two', n: 2 } })
  })

  class Money {
    constructor(readonly cents: number) {}
    format() {
      return `${this.cents / 100}`
    }
  }
  const cycle: Record<string, unknown> = { name: 'loop' }
  cycle.self = cycle

  it.each([
    ['a Date', () => new Date(), 'value is a Date'],
    ['a Map', () => new Map([['a', 1]]), 'value is a Map'],
    ['a Set', () => new Set([1]), 'value is a Set'],
    ['a class instance', () => new Money(100), 'value is a Money'],
    ['a function', () => () => 1, 'value is a function'],
    ['a symbol', () => Symbol('s'), 'value is a symbol'],
    ['NaN', () => Number.NaN, 'value is NaN'],
    ['Infinity', () => Number.POSITIVE_INFINITY, 'value is Infinity'],
    ['a BigInt', () => 10n, 'value is a bigint'],
    ['a cycle', () => cycle, 'value.self is a cycle'],
    ['a Date inside an object', () => ({ when: new Date() }), 'value.when is a Date'],
  ] as Array<[string, () => unknown, string]>)(
    'R3: %s is refused with NotJsonError at run time, and nothing is stored',
    async (label, make, found) => {
      const log = newLog(prefix)
      const toolCallId = `call-${label.replace(/\W+/g, '-')}`
      let fnCalls = 0
      const tool = probe('notJson', async ({ step }) =>
        // cast: TypeScript refuses these (see test/types/stepValues.test-d.ts); run time must too
        step.do('v', (() => {
          fnCalls++
          return make()
        }) as () => never),
      )
      const run = (await attempt(log, tool, toolCallId)).run
      await expect(run).rejects.toBeInstanceOf(NotJsonError)
      await expect(run).rejects.toThrow(`Step "v" value must be JSON, but ${found}`)
      expect(fnCalls).toBe(1)
      expect(await log.calls.getStep(toolCallId, 'v')).toEqual({ found: false })
      expect(await stepRecords(log, toolCallId)).toEqual([])
    },
  )

  it('R3: step.do returns the JSON copy on the first run too, the same value a run again gets', async () => {
    const log = newLog(prefix)
    const returned: Array<{ value: unknown; keys: string[] }> = []
    let made: { a?: undefined; b: Array<string | undefined>; keep: number; nested: { x: number } } | undefined
    let crash = true
    const tool = probe('copy', async ({ step }) => {
      const value = await step.do('v', () => {
        made = { a: undefined, b: [undefined], keep: 1, nested: { x: 1 } }
        // a change after fn returned, while the value is on its way to RedisClient
        setImmediate(() => {
          made!.keep = 2
          made!.nested.x = 2
        })
        return made
      })
      returned.push({ value: structuredClone(value), keys: Object.keys(value) })
      if (crash) {
        // and a change after step.do resolved: the value the tool holds is its own copy
        made!.b.push('late')
        expect(value).not.toBe(made)
        throw new Crash()
      }
      return value
    })
    await expect((await attempt(log, tool, 'call-copy')).run).rejects.toBeInstanceOf(Crash)
    crash = false
    await (
      await attempt(log, tool, 'call-copy')
    ).run

    const json = { b: [null], keep: 1, nested: { x: 1 } }
    expect(returned[0]!.value).toStrictEqual(json)
    expect(returned[0]!.keys).toEqual(['b', 'keep', 'nested'])
    expect(returned[1]!.value).toStrictEqual(returned[0]!.value)
    expect(await log.calls.getStep('call-copy', 'v')).toEqual({ found: true, value: json })
  })

  it('R3: a void step is stored as done and replays as undefined without calling fn', async () => {
    const log = newLog(prefix)
    let fnCalls = 0
    let crash = true
    const results: unknown[] = []
    const tool = probe('void', async ({ step, toolCallId }) => {
      const sent = await step.do('invoice', async () => {
        fnCalls++
      })
      results.push(sent, await log.calls.getStep(toolCallId, 'invoice'), await stepRecords(log, toolCallId))
      if (crash) throw new Crash()
      return 'sent'
    })
    await expect((await attempt(log, tool, 'call-void')).run).rejects.toBeInstanceOf(Crash)
    crash = false
    expect(await (await attempt(log, tool, 'call-void')).run).toBe('sent')
    expect(fnCalls).toBe(1)
    const done = { found: true, value: undefined }
    const record = { type: 'harness.tool.step', toolCallId: 'call-void', name: 'invoice' }
    expect(results).toStrictEqual([undefined, done, [record], undefined, done, [record]])
  })

  it('R4: a value over the default limit of 256 KiB throws ValueTooLargeError with the size and the limit', async () => {
    const log = newLog(prefix)
    expect(DEFAULT_DURABILITY.maxValueBytes).toBe(256 * 1024)
    const tool = probe('big', async ({ step }) => {
      const fits = await step.do('fits', () => 'x'.repeat(256 * 1024 - 2)) // exactly the limit as JSON
      await step.do('big', () => ({ blob: 'x'.repeat(256 * 1024) }))
      return fits.length
    })
    const run = (await attempt(log, tool, 'call-big')).run
    await expect(run).rejects.toBeInstanceOf(ValueTooLargeError)
    const size = JSON.stringify({ blob: 'x'.repeat(256 * 1024) }).length
    await expect(run).rejects.toThrow(`Step "big" value is ${size} bytes as JSON, over the limit of 262144 bytes`)
    expect(await log.calls.getStep('call-big', 'big')).toEqual({ found: false })
    expect((await stepRecords(log, 'call-big')).map((r) => r.name)).toEqual(['fits'])
  })

  it('R4: a configured limit applies to step values and append records', async () => {
    const log = newLog(prefix)
    const errors: unknown[] = []
    const tool = probe('small', async ({ step, append }) => {
      await step.do('ok', () => ({ t: 'y'.repeat(50) })) // 58 bytes
      await step.do('big', () => ({ t: 'y'.repeat(100) })).catch((e) => errors.push(e)) // 108 bytes
      try {
        append([{ type: 'app.note', t: 'y'.repeat(100) }])
      } catch (e) {
        errors.push(e)
      }
      return 'done'
    })
    const a = await attempt(log, tool, 'call-small', {}, { maxValueBytes: 64 })
    expect(await a.run).toBe('done')
    await a.handle.flush()
    expect(errors).toHaveLength(2)
    expect(errors[0]).toBeInstanceOf(ValueTooLargeError)
    expect((errors[0] as Error).message).toContain('is 108 bytes as JSON, over the limit of 64 bytes')
    expect(errors[1]).toBeInstanceOf(ValueTooLargeError)
    expect((errors[1] as Error).message).toContain('over the limit of 64 bytes')
    expect(await log.calls.getStep('call-small', 'big')).toEqual({ found: false })
    expect(await redis.llen(log.calls.stagedKey('call-small'))).toBe(0)
  })

  describe('R6: session secrets', () => {
    const secretPrefix = uniquePrefix('steps-secret')
    const secrets = () => new SecretStore({ OTHER: 'not-in-any-value', STRIPE_KEY: SECRET })

    it.each(Object.entries(SECRET_FORMS))(
      'R6: a step value holding the secret (%s) throws SecretInValueError on the first run and on a run again',
      async (form, text) => {
        const log = newLog(secretPrefix)
        const toolCallId = `call-${form}`
        let cleanCalls = 0
        let leakCalls = 0
        const tool = probe('leaky', async ({ step, secrets: s }) => {
          expect(s.get('STRIPE_KEY')).toBe(SECRET)
          await step.do('clean', () => ({ marker: `clean-${form}`, n: ++cleanCalls }))
          await step.do('leak', () => ({ auth: { header: `Bearer ${text}` }, n: ++leakCalls }))
          return 'unreachable'
        })
        const errors: unknown[] = []
        for (let run = 0; run < 2; run++) {
          const a = await attempt(log, tool, toolCallId, {}, { secrets: secrets() })
          expect(a.begin.kind).toBe(run === 0 ? 'fresh' : 'rerun')
          await a.run.catch((e) => errors.push(e))
        }
        expect(errors).toHaveLength(2)
        for (const error of errors) {
          expect(error).toBeInstanceOf(SecretInValueError)
          expect((error as Error).message).toContain('Step "leak" value holds the session secret STRIPE_KEY')
          for (const f of STORED_FORMS) expect((error as Error).message).not.toContain(f)
        }
        expect(cleanCalls).toBe(1)
        expect(leakCalls).toBe(2)
        expect(await log.calls.getStep(toolCallId, 'leak')).toEqual({ found: false })
        await expectNoSecretStored(secretPrefix, `clean-${form}`)
      },
    )

    it.each(Object.entries(SECRET_FORMS))(
      'R6: an append record holding the secret (%s) throws, and nothing is staged',
      async (form, text) => {
        const log = newLog(secretPrefix)
        const toolCallId = `call-append-${form}`
        const tool = probe('appender', async ({ append }) => {
          append([{ type: 'app.marker', marker: `append-${form}` }])
          expect(() => append([{ type: 'app.token', token: { value: text } }])).toThrow(SecretInValueError)
          expect(() => append([{ type: 'app.token', token: text }])).toThrow('holds the session secret STRIPE_KEY')
          return 'done'
        })
        const a = await attempt(log, tool, toolCallId, {}, { secrets: secrets() })
        expect(await a.run).toBe('done')
        await a.handle.flush()
        const staged = await redis.lrange(log.calls.stagedKey(toolCallId), 0, -1)
        expect(staged).toEqual([JSON.stringify({ type: 'app.marker', marker: `append-${form}` })])
        await expectNoSecretStored(secretPrefix, `append-${form}`)
      },
    )

    it('R6: a stored value that holds a secret of a later run throws on replay', async () => {
      // its own prefix: the value was no secret when it was stored, so Redis holds it on purpose
      const log = newLog(uniquePrefix('steps-rotated'))
      const tool = probe('rotated', async ({ step }) => {
        await step.do('token', () => 'tok_will_be_secret')
        throw new Crash()
      })
      await expect((await attempt(log, tool, 'call-rot')).run).rejects.toBeInstanceOf(Crash)
      const again = await attempt(log, tool, 'call-rot', {}, { secrets: new SecretStore({ ROTATED: 'tok_will_be_secret' }) })
      await expect(again.run).rejects.toBeInstanceOf(SecretInValueError)
    })
  })

  it('R9: append validates its records at once, and a refused call stages none of them', async () => {
    const log = newLog(prefix)
    const tool = probe('validate', async ({ append }) => {
      expect(() => append({ type: 'app.x' } as never)).toThrow(TypeError)
      expect(() => append('app.x' as never)).toThrow('append takes an array of records')
      expect(() => append([{ fact: 'no type' } as never])).toThrow(ReservedRecordTypeError)
      expect(() => append([{ type: '' }])).toThrow(ReservedRecordTypeError)
      expect(() => append([{ type: 42 } as never])).toThrow(ReservedRecordTypeError)
      expect(() => append([{ type: 'harness.tool.result', toolCallId: 'x', name: 'y' }])).toThrow(ReservedRecordTypeError)
      expect(() => append([{ type: 'harness.mine' }])).toThrow('Record type "harness.mine" is not allowed')
      expect(() => append([{ type: 'app.ok' }, { type: 'app.when', at: new Date() }])).toThrow(NotJsonError)
      expect(() => append([{ type: 'app.ok' }, { type: 'app.n', n: Number.NaN }])).toThrow(
        'append record [1] (app.n) must be JSON, but value.n is NaN',
      )
      expect(() => append([{ type: 'app.ok' }, { type: 'harness.x' }])).toThrow(ReservedRecordTypeError)
      append([])
      append([{ type: 'app.kept', n: 1 }])
      return 'done'
    })
    const a = await attempt(log, tool, 'call-validate')
    expect(await a.run).toBe('done')
    await a.handle.flush()
    // only the valid record is staged, and nothing is in the log before the result lands
    expect(await redis.lrange(log.calls.stagedKey('call-validate'), 0, -1)).toEqual([JSON.stringify({ type: 'app.kept', n: 1 })])
    expect((await rawRecords(log)).filter((r) => !r.type.startsWith('harness.'))).toEqual([])
  })

  it("R9: a safe call cut after append and run again lands its records exactly once (the cut attempt's are discarded)", async () => {
    const log = newLog(prefix)
    let crash = true
    const remember = durableTool(
      toolDefinition({ name: 'remember', description: 'Remember a fact about the user', inputSchema: z.object({ fact: z.string() }) }),
      async ({ fact }, { append }) => {
        append([{ type: 'app.memory', fact }])
        if (crash) throw new Crash()
        return 'Remembered.'
      },
    )
    const first = await attempt(log, remember, 'call-mem', { fact: 'likes tea' })
    await expect(first.run).rejects.toBeInstanceOf(Crash)
    await first.handle.flush()
    // staged durably by the cut attempt, not in the log
    expect(await redis.llen(log.calls.stagedKey('call-mem'))).toBe(1)

    crash = false
    const again = await attempt(log, remember, 'call-mem', { fact: 'likes tea' })
    expect(again.begin.kind).toBe('rerun')
    const result = await again.run
    await again.handle.flush()
    await log.calls.landResult({ toolCallId: 'call-mem', epoch: again.begin.epoch }, 'remember', { result })

    const records = await rawRecords(log)
    expect(records.filter((r) => r.type === 'app.memory')).toEqual([{ type: 'app.memory', fact: 'likes tea' }])
    const at = records.findIndex((r) => r.type === 'harness.tool.result' && r.toolCallId === 'call-mem')
    expect(records[at - 1]).toEqual({ type: 'app.memory', fact: 'likes tea' })
    expect(records[at]).toEqual({ type: 'harness.tool.result', toolCallId: 'call-mem', name: 'remember', result: 'Remembered.' })
    expect(await redis.exists(log.calls.stagedKey('call-mem'))).toBe(0)
  })

  describe('R10: the replay option', () => {
    const definition = () => toolDefinition({ name: 'r', description: 'r', inputSchema: z.object({}) })

    it("R10: durableTool(def, fn) replays 'safe'; { replay: 'never' } as the third argument gives 'never'", async () => {
      const safe = durableTool(definition(), async () => 'x')
      const never = durableTool(definition(), async () => 'x', { replay: 'never' })
      expect(replayOf(safe)).toBe('safe')
      expect(safe[DURABLE].replay).toBe('safe')
      expect(replayOf(never)).toBe('never')
      expect(() => durableTool(definition(), async () => 'x', { replay: 'sometimes' as never })).toThrow(ConfigError)
      // the call state that begin writes carries the option (a cut 'never' call is not run again)
      const log = newLog(prefix)
      await log.calls.beginCall('call-never', 'r', replayOf(never))
      expect((await log.calls.getCall('call-never'))?.replay).toBe('never')
      expect((await log.calls.beginCall('call-never', 'r', replayOf(never))).kind).toBe('cut')
    })

    it('R10: durableTool sets replay on the tool it returns from its option; a replay on the definition object is not read', async () => {
      const onDefinition = (replay: string) => Object.assign(definition(), { replay }) as ReturnType<typeof definition>
      const ignoresNever = durableTool(onDefinition('never'), async () => 'x')
      const ignoresSafe = durableTool(onDefinition('safe'), async () => 'x', { replay: 'never' })
      expect(replayOf(ignoresNever)).toBe('safe')
      expect(replayOf(ignoresSafe)).toBe('never')
      expect(ignoresNever.replay).toBe('safe')
      expect(ignoresSafe.replay).toBe('never')
      expect(durableTool(definition(), async () => 'x').replay).toBe('safe')
    })

    it("R10: a plain tool is 'never' unless withReplay(tool, 'safe') (or its own replay: 'safe') says so", async () => {
      const plain = () => definition().server(async () => 'x')
      expect(replayOf(plain())).toBe('never')
      expect(replayOf(withReplay(plain(), 'safe'))).toBe('safe')
      expect(replayOf(withReplay(plain(), 'never'))).toBe('never')
      expect(replayOf(Object.assign(plain(), { replay: 'safe' }))).toBe('safe')
      expect(replayOf(Object.assign(plain(), { replay: 'yes' }))).toBe('never')
    })
  })
})

// ---- through a host with in-process workers ----

/** The ToolCallError a runTool rejects with (fails the test if the call succeeded). */
async function toolError(call: Promise<unknown>): Promise<ToolCallError> {
  const error = await call.then(
    (result) => new Error(`expected a tool error, got ${JSON.stringify(result)}`),
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(ToolCallError)
  return error as ToolCallError
}

describe('durable steps through the harness (session.runTool)', () => {
  const prefix = uniquePrefix('steps-h')
  let host: HarnessHost
  let workers: WorkersHandle
  let session: Session
  const rememberReached = deferred()
  const rememberRelease = deferred()

  const leakResult = durableTool(
    toolDefinition({ name: 'leakResult', description: 'Returns the key', inputSchema: z.object({}) }),
    async (_input, { secrets, step }) => {
      const key = secrets.get('STRIPE_KEY')!
      await step.do('marker', () => 'harness-result-marker')
      return {
        raw: key,
        base64: Buffer.from(key).toString('base64'),
        base64url: Buffer.from(key).toString('base64url'),
        url: `https://pay.example/?key=${encodeURIComponent(key)}`,
        nested: [{ header: `Bearer ${key}` }],
      }
    },
  )
  const leakError = durableTool(
    toolDefinition({ name: 'leakError', description: 'Throws with the key', inputSchema: z.object({}) }),
    async (_input, { secrets }) => {
      const key = secrets.get('STRIPE_KEY')!
      throw new Error(`card refused for key ${key} (${Buffer.from(key).toString('base64')})`)
    },
  )
  const leakStep = durableTool(
    toolDefinition({ name: 'leakStep', description: 'Stores the key', inputSchema: z.object({}) }),
    async (_input, { secrets, step }) => step.do('token', () => ({ token: secrets.get('STRIPE_KEY')! })),
  )
  const remember = durableTool(
    toolDefinition({
      name: 'remember',
      description: 'Remember a fact',
      inputSchema: z.object({ fact: z.string(), hold: z.boolean().optional() }),
    }),
    async ({ fact, hold }, { append }) => {
      append([{ type: 'app.memory', fact }])
      append([{ type: 'app.memory.source', fact, from: 'chat' }])
      if (hold) {
        rememberReached.resolve()
        await rememberRelease.promise
      }
      return 'Remembered.'
    },
  )
  const big = durableTool(
    toolDefinition({ name: 'big', description: 'Too big a step', inputSchema: z.object({}) }),
    async (_input, { step }) => step.do('blob', () => 'x'.repeat(256 * 1024)),
  )
  const askNote = durableTool(
    toolDefinition({ name: 'askNote', description: 'Asks for a note', inputSchema: z.object({}) }),
    async (_input, { step }) => step.ask({ name: 'note', message: 'Any note?', schema: z.object({ note: z.string() }) }),
  )

  const harness = defineHarness({
    name: 'steps',
    adapter: scriptedModel([]),
    tools: [leakResult, leakError, leakStep, remember, big, askNote],
    secrets: () => ({ STRIPE_KEY: SECRET }),
  })

  beforeAll(async () => {
    host = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: pino({ level: 'silent' }) })
    await host.ready()
    workers = host.startWorkers()
    session = host.open(harness, { sessionId: 'steps-session' })
  })

  afterAll(async () => {
    rememberRelease.resolve()
    await workers?.close()
    await host?.close()
  })

  it('R6: a tool result or error holding a session secret lands redacted, and Redis holds no copy', async () => {
    const result = (await session.runTool({ name: 'leakResult', input: {} }, { timeoutMs: patient(20_000) })) as Record<string, unknown>
    expect(result).toEqual({
      raw: '[redacted]',
      base64: '[redacted]',
      base64url: '[redacted]',
      url: 'https://pay.example/?key=[redacted]',
      nested: [{ header: 'Bearer [redacted]' }],
    })

    const error = await toolError(session.runTool({ name: 'leakError', input: {} }, { timeoutMs: patient(20_000) }))
    expect(error.toolError.message).toBe('card refused for key [redacted] ([redacted])')

    const stepError = await toolError(session.runTool({ name: 'leakStep', input: {} }, { timeoutMs: patient(20_000) }))
    expect(stepError.toolError.code).toBe('secret_in_value')

    // the log holds the redacted results, and nothing under the prefix holds the secret
    const results = (await session.log.read({ types: ['harness.tool.result'] })).map((e) => e.record)
    expect(results).toHaveLength(3)
    const dump = await dumpPrefix(redis, url, prefix)
    expect(dump).toContain('harness-result-marker')
    expect(dump).toContain('card refused for key [redacted]')
    for (const form of STORED_FORMS) expect(dump).not.toContain(form)
  })

  it('R6: an ask answer holding a session secret is refused and nothing is logged; a clean answer then wins', async () => {
    const call = session.runTool({ name: 'askNote', input: {}, toolCallId: 'ask-secret' }, { timeoutMs: patient(20_000) })
    let questions = await session.questions()
    for (const end = Date.now() + 20_000; questions.length === 0 && Date.now() < end; questions = await session.questions()) {
      await new Promise((r) => setTimeout(r, 50))
    }
    const [question] = questions
    const error = await session
      .answer(question!.questionId, { note: `use ${Buffer.from(SECRET).toString('base64')}` })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SecretInValueError)
    expect((await session.log.read({ types: ['harness.tool.answer'] })).length).toBe(0)
    expect((await session.questions()).map((q) => q.questionId)).toEqual([question!.questionId])
    await session.answer(question!.questionId, { note: 'all good' })
    expect(await call).toEqual({ note: 'all good' })
    await expectNoSecretStored(prefix, 'all good')
  })

  it('R9: appended records land immediately before the harness.tool.result, and not before the result lands', async () => {
    const toolCallId = 'remember-1'
    const log = new SessionLog(redis, prefix, session.sessionId)
    const call = session.runTool({ name: 'remember', input: { fact: 'likes tea', hold: true }, toolCallId }, { timeoutMs: patient(20_000) })
    await rememberReached.promise
    // staged (durably, fenced) while the tool still runs, but not in the log
    await waitFor(async () => (await redis.llen(log.calls.stagedKey(toolCallId))) === 2, 'the records to be staged')
    const during = (await session.log.read()).map((e) => e.record)
    expect(during.filter((r) => r.type.startsWith('app.'))).toEqual([])
    expect(during.some((r) => r.type === 'harness.tool.result' && (r as { toolCallId?: string }).toolCallId === toolCallId)).toBe(false)

    rememberRelease.resolve()
    expect(await call).toBe('Remembered.')
    const after = (await session.log.read()).map((e) => e.record)
    const at = after.findIndex((r) => r.type === 'harness.tool.result' && (r as { toolCallId?: string }).toolCallId === toolCallId)
    expect(after.slice(at - 2, at + 1)).toEqual([
      { type: 'app.memory', fact: 'likes tea' },
      { type: 'app.memory.source', fact: 'likes tea', from: 'chat' },
      { type: 'harness.tool.result', toolCallId, name: 'remember', result: 'Remembered.' },
    ])
    expect(after.filter((r) => r.type.startsWith('app.'))).toHaveLength(2)
    expect(await redis.exists(log.calls.stagedKey(toolCallId))).toBe(0)
  })

  it('R4: through the harness the default limit (256 KiB) turns a big step into a tool error with the size and the limit', async () => {
    const error = await toolError(session.runTool({ name: 'big', input: {} }, { timeoutMs: patient(20_000) }))
    expect(error.toolError.code).toBe('value_too_large')
    expect(error.toolError.message).toContain(`is ${256 * 1024 + 2} bytes as JSON, over the limit of 262144 bytes`)
  })
})
