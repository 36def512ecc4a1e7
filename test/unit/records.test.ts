import { describe, expect, expectTypeOf, it } from 'vitest'
import { InvalidRecordError } from '../../src/errors/index.js'
import {
  encodeRecord,
  harnessRecordSchemas,
  parseRecord,
  isHarnessRecord,
  asHarnessRecord,
  type HarnessRecord,
  type HarnessRecordType,
  type LogRecord,
  type RecordOf,
} from '../../src/log/index.js'
import { isJsonData } from '../../src/log/jsonData.js'

/** One valid record of every harness type. */
const valid: { [K in HarnessRecordType]: Extract<HarnessRecord, { type: K }> } = {
  'harness.input': { type: 'harness.input', inputId: 'in-1', text: 'Charge order 42', at: 1_700_000_000_000 },
  'harness.turn.rerun': {
    type: 'harness.turn.rerun',
    inputId: 'in-1',
    rerunId: 'r-1',
    at: 1_700_000_000_000,
    calls: ['call_1'],
    principal: 'ops@acme',
  },
  'harness.compaction': {
    type: 'harness.compaction',
    strategy: 'summarizeOldest',
    reason: 'budget',
    inputId: 'in-9',
    base: '1700000000000-3',
    through: { inputId: 'in-7', entryId: '1700000000000-1' },
    summary: 'The user ordered 42; it was charged.',
    tokens: { before: 9_000, after: 3_100 },
    usage: { promptTokens: 5_000, completionTokens: 200, totalTokens: 5_200 },
    at: 1_700_000_000_000,
  },
  'harness.model.response': {
    type: 'harness.model.response',
    inputId: 'in-1',
    text: 'charging',
    toolCalls: [{ toolCallId: 'call_1', name: 'checkout', input: { orderId: 42 } }],
    usage: { promptTokens: 120, completionTokens: 15, totalTokens: 135 },
  },
  'harness.tool.requested': { type: 'harness.tool.requested', toolCallId: 'run-1', name: 'lookup', input: { sku: 'a' } },
  'harness.tool.started': {
    type: 'harness.tool.started',
    toolCallId: 'call_1',
    name: 'checkout',
    attempt: 1,
    replay: 'safe',
    reason: 'fresh',
  },
  'harness.tool.step': { type: 'harness.tool.step', toolCallId: 'call_1', name: 'charge', value: { id: 'ch_1' } },
  'harness.tool.step.retry': {
    type: 'harness.tool.step.retry',
    toolCallId: 'call_1',
    name: 'charge',
    attempt: 1,
    error: { message: 'provider answered 502', name: 'Error' },
    nextAt: 1_700_000_001_000,
  },
  'harness.tool.sleep': { type: 'harness.tool.sleep', toolCallId: 'call_1', name: 'wait', wakeAt: 1_700_000_060_000 },
  'harness.tool.ask': {
    type: 'harness.tool.ask',
    toolCallId: 'call_1',
    questionId: 'q1',
    name: 'approve',
    message: 'Approve?',
    schema: { type: 'boolean' },
    expiresAt: 1_700_000_600_000,
  },
  'harness.tool.answer': { type: 'harness.tool.answer', toolCallId: 'call_1', questionId: 'q1', value: true },
  'harness.tool.wait': {
    type: 'harness.tool.wait',
    toolCallId: 'call_1',
    name: 'settled',
    event: 'payment.settled',
    key: 'order-42',
    until: 1,
  },
  'harness.tool.event': {
    type: 'harness.tool.event',
    toolCallId: 'call_1',
    name: 'settled',
    event: 'payment.settled',
    key: 'order-42',
    payload: { ok: true },
  },
  'harness.tool.suspended': { type: 'harness.tool.suspended', toolCallId: 'call_1', until: 1_700_000_060_000, kind: 'sleep' },
  'harness.tool.result': { type: 'harness.tool.result', toolCallId: 'call_1', name: 'checkout', result: { ok: true } },
  'harness.turn.retry': {
    type: 'harness.turn.retry',
    inputId: 'in-1',
    attempt: 1,
    error: { message: '503 The server is overloaded', code: '503' },
    nextAt: 1_700_000_002_000,
  },
  'harness.turn.paused': { type: 'harness.turn.paused', inputId: 'in-1', error: { message: '503 overloaded' }, at: 1_700_000_000_000 },
  'harness.turn.resumed': { type: 'harness.turn.resumed', inputId: 'in-1', at: 1_700_000_000_000 },
  'harness.turn.finish': {
    type: 'harness.turn.finish',
    inputId: 'in-1',
    cycle: 1,
    responses: 1,
    messages: [{ role: 'user', content: 'You have not posted the message yet.' }],
  },
  'harness.input.settled': { type: 'harness.input.settled', inputId: 'in-1', outcome: 'completed', text: 'done' },
  'harness.recovery': { type: 'harness.recovery', reason: 'cut batch', toolCallId: 'call_1' },
  'harness.fork': {
    type: 'harness.fork',
    from: 'source-1',
    before: 'in-2',
    entryId: '1-0',
    turns: 1,
    principal: 'ops',
    at: 1_700_000_000_000,
  },
  'harness.usage': {
    type: 'harness.usage',
    inputId: 'in_1',
    reason: 'failed',
    usage: { promptTokens: 10, completionTokens: 0, totalTokens: 10, model: 'm', estimated: true },
    at: 1,
  },
  'harness.budget.exceeded': {
    type: 'harness.budget.exceeded',
    inputId: 'in_1',
    scope: 'principal',
    metric: 'cost',
    max: 1,
    spent: 0.9,
    held: 0.05,
    estimate: 0.1,
    action: 'pause',
    principal: 'alice',
    at: 1,
  },
}

/** One invalid variant of every harness type, with why. */
const invalid: Array<[string, unknown]> = [
  ['input without text', { type: 'harness.input', inputId: 'in-1', at: 1 }],
  ['input with a string time', { type: 'harness.input', inputId: 'in-1', text: 'x', at: '2024-01-01' }],
  [
    'model response whose tool call has an empty id',
    { type: 'harness.model.response', inputId: 'i', toolCalls: [{ toolCallId: '', name: 'n', input: {} }] },
  ],
  ['model response without toolCalls', { type: 'harness.model.response', inputId: 'i', text: 'x' }],
  ['requested tool whose input is not JSON', { type: 'harness.tool.requested', toolCallId: 'c', name: 'n', input: new Date() }],
  ['started with attempt 0', { ...valid['harness.tool.started'], attempt: 0 }],
  ['started with a fractional attempt', { ...valid['harness.tool.started'], attempt: 1.5 }],
  [
    'response with a negative token count',
    { ...valid['harness.model.response'], usage: { promptTokens: -1, completionTokens: 0, totalTokens: 0 } },
  ],
  ['response whose usage lacks totalTokens', { ...valid['harness.model.response'], usage: { promptTokens: 1, completionTokens: 1 } }],
  ['started with an unknown replay', { ...valid['harness.tool.started'], replay: 'maybe' }],
  ['started with an unknown reason', { ...valid['harness.tool.started'], reason: 'crash' }],
  ['step without a name', { type: 'harness.tool.step', toolCallId: 'c', value: 1 }],
  ['step whose value is NaN', { type: 'harness.tool.step', toolCallId: 'c', name: 'n', value: NaN }],
  ['sleep without wakeAt', { type: 'harness.tool.sleep', toolCallId: 'c', name: 'n' }],
  ['ask without a message', { ...valid['harness.tool.ask'], message: undefined }],
  ['answer without a questionId', { type: 'harness.tool.answer', toolCallId: 'c', value: 1 }],
  ['suspended with an unknown kind', { ...valid['harness.tool.suspended'], kind: 'nap' }],
  ['result without toolCallId', { type: 'harness.tool.result', name: 'n', result: 1 }],
  ['result whose error has no message', { type: 'harness.tool.result', toolCallId: 'c', name: 'n', error: { code: 'x' } }],
  ['settled with an unknown outcome', { ...valid['harness.input.settled'], outcome: 'done' }],
  ['recovery without a reason', { type: 'harness.recovery' }],
]

describe('parseRecord', () => {
  it('covers every harness record type in these tests', () => {
    expect(Object.keys(valid).sort()).toEqual(Object.keys(harnessRecordSchemas).sort())
  })

  it.each(Object.values(valid))('accepts a valid $type', (record) => {
    expect(parseRecord(record)).toEqual(record)
    expect(parseRecord(JSON.parse(JSON.stringify(record)))).toEqual(record)
  })

  it('accepts optional fields left out: a step with no value, a result with an error, a response without text', () => {
    expect(parseRecord({ type: 'harness.tool.step', toolCallId: 'c', name: 'n' })).toEqual({
      type: 'harness.tool.step',
      toolCallId: 'c',
      name: 'n',
    })
    const failed = { type: 'harness.tool.result', toolCallId: 'c', name: 'n', error: { message: 'boom', code: 'x' } }
    expect(parseRecord(failed)).toEqual(failed)
    const calls = { type: 'harness.model.response', inputId: 'i', toolCalls: [] }
    expect(parseRecord(calls)).toEqual(calls)
  })

  it.each(invalid)('rejects a harness record that fails its schema: %s', (_why, record) => {
    const type = (record as { type: string }).type
    expect(() => parseRecord(record)).toThrow(type)
  })

  it('refuses a tool result that holds a result and an error at once', () => {
    expect(() => parseRecord({ type: 'harness.tool.result', toolCallId: 'c', name: 't', result: 1, error: { message: 'x' } })).toThrow(
      /result and an error/,
    )
    expect(() =>
      encodeRecord({ type: 'harness.tool.result', toolCallId: 'c', name: 't', result: 1, error: { message: 'x' } } as never),
    ).toThrow(InvalidRecordError)
    expect(parseRecord({ type: 'harness.tool.result', toolCallId: 'c', name: 't' })).toEqual({
      type: 'harness.tool.result',
      toolCallId: 'c',
      name: 't',
    })
  })

  it('names the failing field in the message', () => {
    expect(() => parseRecord({ type: 'harness.tool.result', name: 'n' })).toThrow(/toolCallId/)
  })

  it('keeps only schema fields of a harness record on read', () => {
    expect(parseRecord({ ...valid['harness.tool.result'], extra: 'dropped' })).toEqual(valid['harness.tool.result'])
  })

  it("skips an unknown harness.* type (written by a newer version): 'skip', not an error", () => {
    expect(parseRecord({ type: 'harness.future.x', anything: [1, 2] })).toBe('skip')
    expect(parseRecord({ type: 'harness.' })).toBe('skip')
    // the prefix is 'harness.' with the dot: these are app records
    expect(parseRecord({ type: 'harnessing', n: 1 })).toEqual({ type: 'harnessing', n: 1 })
    expect(parseRecord({ type: 'Harness.tool.result' })).toEqual({ type: 'Harness.tool.result' })
  })

  it('returns app records as they are, any JSON fields', () => {
    const app = { type: 'app.memory', text: 'héllo', n: 0, ok: false, none: null, list: [1, 'two', { three: [] }] }
    expect(parseRecord(app)).toBe(app)
  })

  it('rejects an app record that is not JSON', () => {
    for (const bad of [
      { type: 'app.x', at: new Date() },
      { type: 'app.x', n: Infinity },
      { type: 'app.x', big: 1n },
      { type: 'app.x', f: () => 1 },
    ]) {
      expect(() => parseRecord(bad)).toThrow('app.x: not JSON')
    }
  })

  it.each([null, undefined, 42, 'harness.input', true, [], [{ type: 'app.x' }]])('rejects a non-object: %j', (raw) => {
    expect(() => parseRecord(raw)).toThrow('not a JSON object')
  })

  it.each([{}, { type: '' }, { type: 5 }, { type: null }, { type: ['app.x'] }, { kind: 'app.x' }])(
    'rejects a record with no string type: %j',
    (raw) => {
      expect(() => parseRecord(raw)).toThrow('no string "type" field')
    },
  )
})

describe('encodeRecord', () => {
  it.each(Object.values(valid))('encodes a valid $type as JSON that parses back to it', (record) => {
    const encoded = encodeRecord(record)
    expect(typeof encoded).toBe('string')
    expect(parseRecord(JSON.parse(encoded))).toEqual(record)
  })

  it('encodes an app record', () => {
    expect(JSON.parse(encodeRecord({ type: 'app.note', text: 'x', n: [1, null] }))).toEqual({ type: 'app.note', text: 'x', n: [1, null] })
  })

  it.each(invalid)('validates on write: refuses %s with InvalidRecordError', (_why, record) => {
    let error: unknown
    try {
      encodeRecord(record as LogRecord)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(InvalidRecordError)
    expect(error).toMatchObject({ code: 'invalid_record' })
    expect((error as Error).message).toMatch(/^Record refused on write: harness\./)
  })

  it('refuses an unknown harness.* type on write (only a newer reader may skip it)', () => {
    expect(() => encodeRecord({ type: 'harness.future.x' })).toThrow(InvalidRecordError)
    expect(() => encodeRecord({ type: 'harness.future.x' })).toThrow('unknown reserved type harness.future.x')
  })

  it('refuses non-JSON app records and records without a type', () => {
    expect(() => encodeRecord({ type: 'app.x', at: new Date() })).toThrow(InvalidRecordError)
    expect(() => encodeRecord({ type: 'app.x', n: NaN })).toThrow(InvalidRecordError)
    expect(() => encodeRecord({ n: 1 } as never)).toThrow(InvalidRecordError)
    expect(() => encodeRecord(null as never)).toThrow(InvalidRecordError)
    expect(() => encodeRecord([] as never)).toThrow(InvalidRecordError)
  })
})

describe("isJsonData (the records' JSON check)", () => {
  it('accepts what JSON.parse returns, deep and wide', () => {
    const deep: Record<string, unknown> = {}
    let at = deep
    for (let i = 0; i < 500; i++) at = (at.next = { i, list: [i, `${i}`, null, true] }) as Record<string, unknown>
    const bare = Object.assign(Object.create(null) as object, { a: 1 })
    for (const ok of ['', 'x', 0, -0, 1.5, true, false, null, [], {}, [[[]]], { a: [1, { b: null }] }, deep, bare])
      expect(isJsonData(ok)).toBe(true)
    expect(isJsonData(JSON.parse(JSON.stringify(deep)))).toBe(true)
  })

  it('refuses what JSON would change or lose, as z.json() does', () => {
    const cycle: Record<string, unknown> = { a: 1 }
    cycle.self = cycle
    // eslint-disable-next-line no-sparse-arrays
    const sparse = [1, , 3]
    class Point {
      x = 1
    }
    for (const bad of [
      undefined,
      NaN,
      Infinity,
      1n,
      () => 1,
      Symbol('s'),
      new Date(),
      new Map(),
      new Point(),
      { a: undefined },
      [undefined],
      sparse,
      cycle,
      { nested: [{ at: new Date() }] },
    ])
      expect(isJsonData(bad)).toBe(false)
    // the same object twice (not a cycle) is JSON
    const shared = { n: 1 }
    expect(isJsonData({ a: shared, b: [shared, shared] })).toBe(true)
  })
})

describe('isHarnessRecord, asHarnessRecord', () => {
  it('narrow every harness record type, and no app record or malformed value', () => {
    for (const record of Object.values(valid)) {
      expect(isHarnessRecord(record)).toBe(true)
      expect(asHarnessRecord(JSON.parse(JSON.stringify(record)))).toEqual(record)
    }
    const app: LogRecord = { type: 'app.note', text: 'hi' }
    expect(isHarnessRecord(app)).toBe(false)
    expect(asHarnessRecord(app)).toBeUndefined()
    // a type it knows, a shape it does not (a forged event value): not a record
    expect(asHarnessRecord({ type: 'harness.tool.sleep', toolCallId: 'c', name: 's', wakeAt: 'soon' })).toBeUndefined()
    expect(asHarnessRecord({ type: 'harness.future.kind' })).toBeUndefined()
    expect(asHarnessRecord('harness.input')).toBeUndefined()
  })

  it('type a tool result as a result or an error, never both', () => {
    type Result = RecordOf<'harness.tool.result'>
    expectTypeOf<Extract<Result, { error: object }>['result']>().toEqualTypeOf<undefined>()
    expectTypeOf<Extract<Result, { result?: unknown; error?: undefined }>['error']>().toEqualTypeOf<undefined>()
  })
})
