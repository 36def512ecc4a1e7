import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CallMarks, MARK_TRUST_MS } from '../../src/log/index.js'

describe('CallMarks', () => {
  const marks = new CallMarks(randomBytes(32))
  const at = 1_800_000_000_000
  const mark = marks.sign('s1', 'c1', 'fp', at)

  it('verifies its own mark of these ids and fingerprint, within the trust window', () => {
    expect(marks.verify('s1', 'c1', 'fp', mark, at)).toBe(true)
    expect(marks.verify('s1', 'c1', 'fp', mark, at + MARK_TRUST_MS)).toBe(true)
  })

  it('refuses a mark of other ids, another fingerprint, another key, a changed time, past the window, or no string', () => {
    expect(marks.verify('s2', 'c1', 'fp', mark, at)).toBe(false)
    expect(marks.verify('s1', 'c2', 'fp', mark, at)).toBe(false)
    expect(marks.verify('s1', 'c1', 'fp2', mark, at)).toBe(false)
    expect(new CallMarks(randomBytes(32)).verify('s1', 'c1', 'fp', mark, at)).toBe(false)
    expect(marks.verify('s1', 'c1', 'fp', mark.replace(String(at), String(at + 1)), at)).toBe(false)
    expect(marks.verify('s1', 'c1', 'fp', mark, at + MARK_TRUST_MS + 1)).toBe(false)
    for (const bad of [undefined, 42, '', '.', `${at}.`, `x.${mark.split('.')[1]}`])
      expect(marks.verify('s1', 'c1', 'fp', bad, at)).toBe(false)
  })
})
