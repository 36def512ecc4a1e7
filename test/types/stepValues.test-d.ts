// R3 at compile time: a step value must be JSON. step.do refuses a Date, Map, Set, bigint, symbol or a
// class instance with methods, at any depth; it takes objects, arrays, interfaces, void, null, numbers,
// and resolves to the value type of fn.
import { expectTypeOf, test } from 'vitest'
import type { Step } from '../../src/index.js'

declare const step: Step

class Money {
  constructor(readonly cents: number) {}
  format(): string {
    return `${this.cents / 100}`
  }
}

interface Payment {
  id: string
  amount: number
  tags?: string[]
}
declare function charge(): Promise<Payment>

test('values that are not JSON are a type error', async () => {
  // @ts-expect-error a Date
  await step.do('date', () => new Date())
  // @ts-expect-error a Date, from an async fn
  await step.do('date-async', async () => new Date())
  // @ts-expect-error a Map
  await step.do('map', () => new Map<string, number>())
  // @ts-expect-error a Set
  await step.do('set', () => new Set<number>())
  // @ts-expect-error a bigint
  await step.do('bigint', () => 10n)
  // @ts-expect-error a symbol
  await step.do('symbol', () => Symbol('s'))
  // @ts-expect-error a class instance with methods
  await step.do('instance', () => new Money(100))
  // @ts-expect-error a Date nested in an object
  await step.do('nested', () => ({ when: new Date() }))
  // @ts-expect-error a Date deeper, in an array in an object
  await step.do('deeper', () => ({ events: [{ at: new Date() }] }))
  // @ts-expect-error a function
  await step.do('function', () => () => 1)
  // @ts-expect-error a function not called by mistake
  await step.do('uncalled', () => charge)
  // @ts-expect-error a Map in an interface-typed value
  await step.do('map-in-object', (): { lookup: Map<string, string> } => ({ lookup: new Map() }))
})

declare const payment: { id: string; amount: number; ok: boolean; none: null }
declare const count: number

test('JSON values are fine, and step.do resolves to the value type of fn', () => {
  expectTypeOf(step.do('object', () => payment)).resolves.toEqualTypeOf<{ id: string; amount: number; ok: boolean; none: null }>()
  expectTypeOf(step.do('object-async', async () => payment)).resolves.toEqualTypeOf<typeof payment>()
  expectTypeOf(step.do('array', (): number[] => [1, 2, 3])).resolves.toEqualTypeOf<number[]>()
  expectTypeOf(step.do('objects', (): Array<{ a: string }> => [{ a: 'x' }])).resolves.toEqualTypeOf<Array<{ a: string }>>()
  expectTypeOf(step.do('interface', () => charge())).resolves.toEqualTypeOf<Payment>()
  expectTypeOf(step.do('interface-sync', (): Payment => ({ id: 'x', amount: 1 }))).resolves.toEqualTypeOf<Payment>()
  expectTypeOf(step.do('interfaces', async (): Promise<Payment[]> => [])).resolves.toEqualTypeOf<Payment[]>()
  expectTypeOf(step.do('void', async () => {})).resolves.toEqualTypeOf<void>()
  expectTypeOf(step.do('void-sync', () => {})).resolves.toEqualTypeOf<void>()
  expectTypeOf(step.do('null', () => null)).resolves.toEqualTypeOf<null>()
  expectTypeOf(step.do('number', () => count)).resolves.toEqualTypeOf<number>()
  expectTypeOf(step.do('number-declared', (): number => 42)).resolves.toEqualTypeOf<number>()
  expectTypeOf(step.do('string', async () => 'x')).resolves.toEqualTypeOf<string>()
  expectTypeOf(step.do('iso date', () => new Date().toISOString())).resolves.toEqualTypeOf<string>()
  expectTypeOf(step.do('optional', (): { note?: string } => ({}))).resolves.toEqualTypeOf<{ note?: string }>()
  expectTypeOf(step.do('maybe', (): string | undefined => undefined)).resolves.toEqualTypeOf<string | undefined>()
  expectTypeOf(step.do('record', (): Record<string, number> => ({ a: 1 }))).resolves.toEqualTypeOf<Record<string, number>>()
  // a class with data fields only is structurally a plain object: TypeScript accepts it, run time refuses it
  class Row {
    id = 'r'
  }
  expectTypeOf(step.do('data-class', () => new Row())).resolves.toEqualTypeOf<Row>()
})

test('fn gets the idempotency key', async () => {
  await step.do('key', ({ idempotencyKey }) => {
    expectTypeOf(idempotencyKey).toEqualTypeOf<string>()
    return idempotencyKey
  })
})

test('R16: step.do takes a retry policy, typed; the value type is unchanged', async () => {
  expectTypeOf(
    step.do('retried', charge, { retry: { attempts: 3, delay: '1s', backoff: 'linear', maxDelay: 60_000, jitter: true } }),
  ).resolves.toEqualTypeOf<Payment>()
  await step.do('retry-if', charge, { retry: { attempts: 2, retryIf: (error) => error instanceof TypeError } })
  // @ts-expect-error attempts is required
  await step.do('no-attempts', charge, { retry: { delay: '1s' } })
  // @ts-expect-error a backoff the policy does not know
  await step.do('bad-backoff', charge, { retry: { attempts: 2, backoff: 'fibonacci' } })
  // @ts-expect-error a delay that is not a Duration
  await step.do('bad-delay', charge, { retry: { attempts: 2, delay: 'soon' } })
})
