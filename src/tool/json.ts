import { NotJsonError, ValueTooLargeError } from '../errors/index.js'

/** A JSON value, as stored in the session log. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json }

/**
 * The compile-time half of R3: `T` itself when it is JSON-shaped, `never` where it is not, so a Date,
 * Map, Set, function, symbol, bigint or an instance with methods is a type error at the call site.
 */
export type JsonChecked<T> = T extends string | number | boolean | null | undefined | void
  ? T
  : T extends
        | ((...args: never[]) => unknown)
        | symbol
        | bigint
        | Date
        | RegExp
        | Map<unknown, unknown>
        | Set<unknown>
        | WeakMap<object, unknown>
        | WeakSet<object>
        | Promise<unknown>
        | Error
        | ArrayBufferView
        | ArrayBuffer
    ? never
    : T extends readonly unknown[]
      ? { [K in keyof T]: JsonChecked<T[K]> }
      : T extends object
        ? { [K in keyof T]: K extends symbol ? never : JsonChecked<T[K]> }
        : never

const MAX_ARRAY_ITEMS = 8 * 1024 * 1024

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'number') return String(value)
  if (typeof value !== 'object') return `a ${typeof value}`
  const name = Object.getPrototypeOf(value)?.constructor?.name
  return name ? `a ${name}` : 'an object with a custom prototype'
}

/**
 * The run-time half of R3: returns the JSON copy of `value` (what a run again would read back), or
 * throws NotJsonError naming the first offending path. `undefined` follows JSON: dropped from
 * objects, `null` in arrays; at the top it stays `undefined` ("done, no value").
 */
export function toJsonCopy(value: unknown, what: string): unknown {
  const ancestors = new Set<object>()
  const visit = (v: unknown, path: string): Json | undefined => {
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v
      case 'number':
        if (!Number.isFinite(v)) throw new NotJsonError(what, path, describe(v))
        return v
      case 'undefined':
        return undefined
      case 'object': {
        if (v === null) return null
        if (ancestors.has(v)) throw new NotJsonError(what, path, 'a cycle (it refers back to an object that contains it)')
        const proto = Object.getPrototypeOf(v)
        ancestors.add(v)
        try {
          if (Array.isArray(v)) {
            if (proto !== Array.prototype) throw new NotJsonError(what, path, describe(v))
            // an index loop, not map: map skips the holes of a sparse array, JSON writes them as null.
            // Each item is at least 2 bytes of JSON, so a longer array is over any size limit anyway.
            if (v.length > MAX_ARRAY_ITEMS)
              throw new NotJsonError(what, path, `an array of ${v.length} items (at most ${MAX_ARRAY_ITEMS} can be stored)`)
            const items: Json[] = []
            for (let i = 0; i < v.length; i++) items.push(visit(v[i], `${path}[${i}]`) ?? null)
            return items
          }
          if (proto !== Object.prototype && proto !== null) throw new NotJsonError(what, path, describe(v))
          if (Object.getOwnPropertySymbols(v).length > 0) throw new NotJsonError(what, path, 'an object with symbol keys')
          const out: Record<string, Json> = {}
          for (const [key, item] of Object.entries(v)) {
            const copied = visit(item, `${path}.${key}`)
            if (copied === undefined) continue
            // a key named __proto__ is defined, not assigned: it stays data, as JSON.parse keeps it on
            // replay (every other key is assigned: defineProperty would slow the object down)
            if (key === '__proto__')
              Object.defineProperty(out, key, { value: copied, enumerable: true, writable: true, configurable: true })
            else out[key] = copied
          }
          return out
        } finally {
          ancestors.delete(v)
        }
      }
      default:
        throw new NotJsonError(what, path, describe(v))
    }
  }
  return visit(value, 'value')
}

export const DEFAULT_MAX_VALUE_BYTES = 256 * 1024

/** Encodes an already-checked JSON copy and enforces the size limit (R4). */
export function encodeChecked(copy: unknown, what: string, limit: number): string | undefined {
  if (copy === undefined) return undefined
  const encoded = JSON.stringify(copy)
  const size = Buffer.byteLength(encoded)
  if (size > limit) throw new ValueTooLargeError(what, size, limit)
  return encoded
}
