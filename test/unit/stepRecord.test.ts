import { describe, expect, it } from 'vitest'
import { encodeRecord, stepRecordJson } from '../../src/log/index.js'
import { toJsonCopy } from '../../src/tool/json.js'

describe('a step record made from its parts (stepRecordJson)', () => {
  it('is byte for byte what encodeRecord writes for the same step, with and without a value', () => {
    const values: unknown[] = [undefined, 1, 'two', null, true, [1, { a: 'b' }], { nested: { deep: [null, 'x'] } }, { ключ: 'значение 🚀' }]
    for (const name of ['a', 'charge card', 'naïve "quoted" \\ name', 'emoji 🚀', 'lone \ud800 surrogate'])
      for (const value of values) {
        const copy = toJsonCopy(value, 'value')
        const encoded = copy === undefined ? undefined : JSON.stringify(copy)
        const record =
          copy === undefined
            ? { type: 'harness.tool.step', toolCallId: 'call-1', name }
            : { type: 'harness.tool.step', toolCallId: 'call-1', name, value: copy }
        expect(stepRecordJson('call-1', name, encoded)).toBe(encodeRecord(record))
      }
  })
})
