// The stored arrays of a parked call's five records (src/log/storedRecords.ts, docs/decisions/parked-call-memory.md):
// one-to-one with the records they hold, hostile ids and names included, and every other shape refused.
import { describe, expect, it } from 'vitest'
import { encodeRecord, encodeStored, parseCompactRecord, stepRecordJson, type LogRecord } from '../../src/log/index.js'
import { toJsonCopy } from '../../src/tool/json.js'

const hostile = ['call-1', 'toolu_01AbCdEfGhIjKlMnOpQrStUv', 'a"b\\c],["q"', 'emoji 🚀 ünï', 'lone \ud800 surrogate', '\u0000nul']
const records = (id: string, name: string): LogRecord[] => [
  { type: 'harness.tool.requested', toolCallId: id, name, input: { ms: 1, text: name } },
  { type: 'harness.tool.requested', toolCallId: id, name, input: null },
  { type: 'harness.tool.started', toolCallId: id, name, attempt: 3, replay: 'never', reason: 'cut' },
  { type: 'harness.tool.started', toolCallId: id, name, attempt: 1, replay: 'safe', reason: 'fresh', version: name },
  { type: 'harness.tool.step', toolCallId: id, name },
  { type: 'harness.tool.step', toolCallId: id, name, value: null },
  { type: 'harness.tool.step', toolCallId: id, name, value: [1, { a: name }] },
  { type: 'harness.tool.sleep', toolCallId: id, name, wakeAt: 1796616172964 },
  { type: 'harness.tool.suspended', toolCallId: id, until: 1796616172964, kind: 'sleep' },
]
const read = (stored: string) => {
  const value: unknown = JSON.parse(stored)
  return Array.isArray(value) ? parseCompactRecord(value) : value
}

describe('stored arrays of a parked call records', () => {
  it('R1 R7: each of the five records reads back as itself, and no two records store the same array', () => {
    const seen = new Map<string, string>()
    const distinct = new Set<string>()
    for (const id of hostile)
      for (const name of hostile)
        for (const record of records(id, name)) {
          const stored = encodeStored(record, true)
          expect(stored.startsWith('[')).toBe(true)
          expect(read(stored)).toEqual(read(encodeRecord(record)))
          const key = JSON.stringify(read(encodeRecord(record)))
          distinct.add(key)
          expect(seen.get(stored) ?? key).toBe(key)
          seen.set(stored, key)
        }
    expect(seen.size).toBe(distinct.size)
  })

  it('R1: a step record made from its parts is the array encodeStored writes, with and without a value', () => {
    for (const name of hostile)
      for (const value of [undefined, null, 0, 'two', { nested: [null, 'x'] }]) {
        const copy = toJsonCopy(value, 'value')
        const encoded = copy === undefined ? undefined : JSON.stringify(copy)
        const record: LogRecord = { type: 'harness.tool.step', toolCallId: 'c', name, ...(copy === undefined ? {} : { value: copy }) }
        expect(stepRecordJson('c', name, encoded, true)).toBe(encodeStored(record, true))
      }
  })

  it('every other record is stored as its object, and a log of format 1 stores all five as objects', () => {
    const result: LogRecord = { type: 'harness.tool.result', toolCallId: 'c', name: 'n', result: 1 }
    expect(encodeStored(result, true)).toBe(encodeRecord(result))
    expect(encodeStored({ type: 'app.note', text: 'x' }, true)).toBe('{"type":"app.note","text":"x"}')
    for (const record of records('c', 'n')) expect(encodeStored(record, false)).toBe(encodeRecord(record))
  })

  it('a stored array of another shape is refused with what is wrong; a tag of a newer version is skipped', () => {
    expect(() => parseCompactRecord([])).toThrow(/without a tag/)
    expect(() => parseCompactRecord([1, 'c'])).toThrow(/without a tag/)
    expect(() => parseCompactRecord(['z', 'c', 'nap'])).toThrow(/harness.tool.sleep: a stored array of 2 fields \(expected 3\)/)
    expect(() => parseCompactRecord(['s', 'c', 'n', 1, 2])).toThrow(/expected 2 or 3/)
    expect(() => parseCompactRecord(['p', 'c', 'soon', 'sleep'])).toThrow(/harness.tool.suspended/)
    expect(() => parseCompactRecord(['b', 'c', 'n', 0, 'safe', 'fresh'])).toThrow(/harness.tool.started/)
    expect(parseCompactRecord(['later', 'c'])).toBe('skip')
    // '__proto__' and other names of Object.prototype are no tags
    expect(parseCompactRecord(['__proto__', 'c'])).toBe('skip')
    expect(parseCompactRecord(['toString', 'c'])).toBe('skip')
  })
})
