import { describe, expect, it } from 'vitest'
import { laneSizes } from '../../src/harness/workers.js'

describe('fetch lanes of a tool queue (laneSizes)', () => {
  it('splits the slots over one lane per 10, sizes differing by one at most, adding up to the concurrency', () => {
    expect(laneSizes(1)).toEqual([1])
    expect(laneSizes(10)).toEqual([10])
    expect(laneSizes(11)).toEqual([6, 5])
    expect(laneSizes(20)).toEqual([10, 10])
    expect(laneSizes(50)).toEqual([10, 10, 10, 10, 10])
    for (let c = 1; c <= 200; c++) {
      const sizes = laneSizes(c)
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(c)
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1)
    }
  })

  it('takes a lane count, never more lanes than slots nor fewer than one', () => {
    expect(laneSizes(20, 1)).toEqual([20])
    expect(laneSizes(20, 4)).toEqual([5, 5, 5, 5])
    expect(laneSizes(3, 10)).toEqual([1, 1, 1])
    expect(laneSizes(5, 0)).toEqual([5])
  })
})
