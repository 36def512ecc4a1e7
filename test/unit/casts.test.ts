// The cast count of `npm run lint` (scripts/lint/casts.js): what counts as a cast, and src/ within its budget.
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { CAST_BUDGET, castsByUnit, castsIn, countCasts } from '../../scripts/lint/casts.js'

describe('the cast count', () => {
  test('counts `as T` and `<T>x`, not `as const` nor `satisfies`', () => {
    const code = [
      'const a = x as string',
      'const b = <number>y',
      "const c = ['a'] as const",
      'const d = { n: 1 } satisfies object',
      'const e = z as unknown as Date',
    ].join('\n')
    expect(castsIn('t.ts', code).map((c) => c.text)).toEqual(['x as string', '<number>y', 'z as unknown as Date', 'z as unknown'])
  })

  test('src/ stays within CAST_BUDGET and has no `as unknown as`', () => {
    const casts = countCasts(join(import.meta.dirname, '../..'))
    expect(casts.length).toBeLessThanOrEqual(CAST_BUDGET)
    expect(casts.filter((c) => /as unknown as/.test(c.text))).toEqual([])
    expect([...castsByUnit(casts).values()].reduce((a, b) => a + b, 0)).toBe(casts.length)
  })
})
