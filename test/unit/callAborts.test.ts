import { describe, expect, it } from 'vitest'
import { CallAborts } from '../../src/call/callAborts.js'

describe("an attempt's abort (CallAborts), its signal made on first read", () => {
  it('a signal read after the abort is already aborted, with the abort reason', () => {
    const attempt = new CallAborts().open(undefined)
    const reason = new Error('turn ended')
    attempt.abort(reason)
    expect(attempt.aborted).toBe(true)
    expect(attempt.reason).toBe(reason)
    expect(attempt.signal.aborted).toBe(true)
    expect(attempt.signal.reason).toBe(reason)
  })

  it('a signal read before fires on the abort, once; the first reason stays', () => {
    const attempt = new CallAborts().open(undefined)
    const signal = attempt.signal
    let fired = 0
    signal.addEventListener('abort', () => fired++)
    let called = 0
    attempt.whenAborted(() => called++)
    attempt.abort(new Error('first'))
    attempt.abort(new Error('second'))
    expect([fired, called]).toEqual([1, 1])
    expect((signal.reason as Error).message).toBe('first')
    expect(attempt.signal).toBe(signal)
  })

  it("abortTurn aborts the turn's open attempts only, and a done attempt is forgotten", () => {
    const aborts = new CallAborts()
    const [a, b, other] = [aborts.open('s|t1'), aborts.open('s|t1'), aborts.open('s|t2')]
    b.done()
    aborts.abortTurn('s|t1', 'aborted')
    expect([a.aborted, b.aborted, other.aborted]).toEqual([true, false, false])
    expect((a.reason as Error).message).toBe('aborted')
  })
})
