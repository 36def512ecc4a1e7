// R3 and R4 at the unit level: what counts as JSON, the copy a step returns, the size limit.
import { describe, expect, it } from 'vitest'
import { NotJsonError, ValueTooLargeError } from '../../src/errors/index.js'
import { DEFAULT_MAX_VALUE_BYTES, encodeChecked, toJsonCopy } from '../../src/tool/json.js'

class Money {
  constructor(readonly cents: number) {}
}

function notJson(value: unknown): NotJsonError {
  try {
    toJsonCopy(value, 'Step "x" value')
  } catch (error) {
    expect(error).toBeInstanceOf(NotJsonError)
    return error as NotJsonError
  }
  throw new Error(`expected NotJsonError for ${String(value)}`)
}

describe('toJsonCopy (R3)', () => {
  it('R3: keeps JSON values and returns a deep copy, not the same objects', () => {
    const value = { s: 'a', n: -1.5, t: true, z: null, list: [1, { deep: ['x'] }], empty: {} }
    const copy = toJsonCopy(value, 'v') as typeof value
    expect(copy).toStrictEqual(value)
    expect(copy).not.toBe(value)
    expect(copy.list).not.toBe(value.list)
    expect(copy.list[1]).not.toBe(value.list[1])
    for (const primitive of ['x', 0, false, null]) expect(toJsonCopy(primitive, 'v')).toBe(primitive)
  })

  it('R3: undefined follows JSON: dropped in objects, null in arrays, undefined at the top', () => {
    const copy = toJsonCopy({ a: undefined, b: [undefined, 1], c: { d: undefined } }, 'v')
    expect(copy).toStrictEqual({ b: [null, 1], c: {} })
    expect(Object.keys(copy as object)).toEqual(['b', 'c'])
    expect(toJsonCopy(undefined, 'v')).toBeUndefined()
    // the same as a JSON round trip, which is what a run again reads back
    const value = { a: undefined, b: [undefined], c: 'x' }
    expect(toJsonCopy(value, 'v')).toStrictEqual(JSON.parse(JSON.stringify(value)))
  })

  it('R3: a plain object with a null prototype and a shared (non-cyclic) object are JSON', () => {
    const bare = Object.assign(Object.create(null), { a: 1 })
    expect(toJsonCopy(bare, 'v')).toStrictEqual({ a: 1 })
    const shared = { id: 'x' }
    expect(toJsonCopy({ left: shared, right: [shared] }, 'v')).toStrictEqual({ left: { id: 'x' }, right: [{ id: 'x' }] })
  })

  it.each([
    ['a Date', new Date(0), 'a Date'],
    ['a Map', new Map([['a', 1]]), 'a Map'],
    ['a Set', new Set([1]), 'a Set'],
    ['a class instance', new Money(5), 'a Money'],
    ['a function', () => 1, 'a function'],
    ['a symbol', Symbol('s'), 'a symbol'],
    ['a bigint', 10n, 'a bigint'],
    ['NaN', Number.NaN, 'NaN'],
    ['Infinity', Number.POSITIVE_INFINITY, 'Infinity'],
    ['-Infinity', Number.NEGATIVE_INFINITY, '-Infinity'],
    ['a RegExp', /x/, 'a RegExp'],
    ['an Error', new Error('e'), 'a Error'],
    ['a typed array', new Uint8Array(2), 'a Uint8Array'],
  ])('R3: %s is refused with NotJsonError naming it', (_label, value, found) => {
    const error = notJson(value)
    expect(error.code).toBe('not_json')
    expect(error.message).toContain('Step "x" value must be JSON')
    expect(error.message).toContain(`value is ${found}`)
  })

  it('R3: the error names the path of the first value that is not JSON', () => {
    expect(notJson({ order: { items: [{ sku: 'a' }, { at: new Date() }] } }).message).toContain('value.order.items[1].at is a Date')
    expect(notJson([1, [2, Number.NaN]]).message).toContain('value[1][1] is NaN')
    expect(notJson({ fmt: { f() {} } }).message).toContain('value.fmt.f is a function')
    expect(notJson({ [Symbol('k')]: 1 }).message).toContain('an object with symbol keys')
    // a class instance without methods looks like a plain object to TypeScript, so run time refuses it
    expect(notJson({ price: new Money(1) }).message).toContain('value.price is a Money')
  })

  it('R3: a cycle is refused, at the path where it closes', () => {
    const node: Record<string, unknown> = { name: 'a' }
    node.self = { back: node }
    const error = notJson(node)
    expect(error.message).toContain('value.self.back is a cycle')
    const list: unknown[] = [1]
    list.push(list)
    expect(notJson(list).message).toContain('value[1] is a cycle')
  })

  it('R3: an array subclass is refused (it would not come back as itself)', () => {
    class Items extends Array<number> {}
    expect(notJson(Items.from([1])).message).toContain('is a Items')
  })
})

describe('encodeChecked (R4)', () => {
  it('R4: the default limit is 256 KiB', () => {
    expect(DEFAULT_MAX_VALUE_BYTES).toBe(256 * 1024)
  })

  it('R4: returns the JSON text, and undefined for "no value"', () => {
    expect(encodeChecked({ a: [1, 'b'] }, 'v', 100)).toBe('{"a":[1,"b"]}')
    expect(encodeChecked(undefined, 'v', 1)).toBeUndefined()
    expect(encodeChecked(null, 'v', 4)).toBe('null')
  })

  it('R4: a value of exactly the limit passes; one byte more throws with the size and the limit', () => {
    // '"' + 8 chars + '"' = 10 bytes
    expect(encodeChecked('abcdefgh', 'v', 10)).toBe('"abcdefgh"')
    const fail = () => encodeChecked('abcdefghi', 'Step "big" value', 10)
    expect(fail).toThrow(ValueTooLargeError)
    expect(fail).toThrow('Step "big" value is 11 bytes as JSON, over the limit of 10 bytes')
    try {
      fail()
    } catch (error) {
      expect((error as ValueTooLargeError).code).toBe('value_too_large')
    }
  })

  it('R4: the size is counted in UTF-8 bytes, not characters', () => {
    // 'é' is 2 bytes, '😀' is 4: 2 quotes + 2 + 4 = 8 bytes in 4 characters of JSON
    expect(encodeChecked('é😀', 'v', 8)).toBe('"é😀"')
    expect(() => encodeChecked('é😀', 'v', 7)).toThrow('is 8 bytes as JSON, over the limit of 7 bytes')
  })

  it('R4: the default limit refuses a value just over 256 KiB', () => {
    const justOver = 'x'.repeat(DEFAULT_MAX_VALUE_BYTES - 1) // + 2 quotes = limit + 1
    expect(() => encodeChecked(justOver, 'v', DEFAULT_MAX_VALUE_BYTES)).toThrow(
      `is ${DEFAULT_MAX_VALUE_BYTES + 1} bytes as JSON, over the limit of ${DEFAULT_MAX_VALUE_BYTES} bytes`,
    )
    expect(encodeChecked('x'.repeat(DEFAULT_MAX_VALUE_BYTES - 2), 'v', DEFAULT_MAX_VALUE_BYTES)).toHaveLength(DEFAULT_MAX_VALUE_BYTES)
  })
})
