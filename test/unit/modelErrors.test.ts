import { describe, expect, it } from 'vitest'
import { defineHarness, retryTransientErrors } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { modelErrorOf, retryAfterOf } from '../../src/turn/modelErrors.js'

const ctx = (retries: number, error: { message: string; code?: string; retryAfterMs?: number }) => ({
  sessionId: 's',
  inputId: 'i',
  retries,
  error,
})

describe('retryTransientErrors', () => {
  it('retries a transient error with a jittered doubling delay, capped at maxDelayMs; then onExhausted', () => {
    const policy = retryTransientErrors({ maxRetries: 3, baseDelayMs: 1_000, maxDelayMs: 3_000 })
    const delays = [0, 1, 2].map((n) => (policy(ctx(n, { message: '503 overloaded' })) as { delayMs: number }).delayMs)
    expect(delays[0]).toBeGreaterThanOrEqual(750)
    expect(delays[0]).toBeLessThanOrEqual(1_000)
    expect(delays[1]).toBeGreaterThanOrEqual(1_500)
    expect(delays[2]).toBeLessThanOrEqual(3_000)
    expect(policy(ctx(3, { message: '503 overloaded' }))).toEqual({ action: 'fail' })
    expect(retryTransientErrors({ maxRetries: 0, onExhausted: 'pause' })(ctx(0, { message: '429' }))).toEqual({ action: 'pause' })
  })

  it("fails a permanent error at once, also with onExhausted 'pause'", () => {
    expect(retryTransientErrors({ onExhausted: 'pause' })(ctx(0, { message: '401 Incorrect API key' }))).toEqual({ action: 'fail' })
  })

  it('waits at least a retry-after up to maxRetryAfterMs; a longer one ends the retries', () => {
    const policy = retryTransientErrors({ baseDelayMs: 10, maxRetryAfterMs: 5_000, onExhausted: 'pause' })
    expect(policy(ctx(0, { message: '429', retryAfterMs: 4_000 }))).toEqual({ action: 'retry', delayMs: 4_000 })
    expect(policy(ctx(0, { message: '429', retryAfterMs: 6_000 }))).toEqual({ action: 'pause' })
  })

  it('refuses bad options with a message naming the option', () => {
    expect(() => retryTransientErrors({ baseDelayMs: -1 })).toThrow(/baseDelayMs must be a finite number/)
    expect(() => retryTransientErrors({ onExhausted: 'wait' as never })).toThrow(/onExhausted must be 'fail' or 'pause'/)
  })

  it('refuses a delay option over 365 days, the longest wait a policy may ask for', () => {
    for (const name of ['baseDelayMs', 'maxDelayMs', 'maxRetryAfterMs'] as const)
      expect(() => retryTransientErrors({ [name]: 1e15 })).toThrow(new RegExp(`${name} must be .*at most 365 days`))
    expect(retryTransientErrors({ maxDelayMs: 365 * 86_400_000, maxRetryAfterMs: 365 * 86_400_000 })).toBeTypeOf('function')
  })
})

describe('model errors from adapters', () => {
  it("reads a RUN_ERROR's message and code, and a thrown SDK error's retry-after headers", () => {
    expect(
      modelErrorOf({
        type: 'RUN_ERROR',
        message: '503 The server is overloaded',
        code: '503',
        error: { message: '503 The server is overloaded', code: '503' },
      }),
    ).toEqual({
      message: '503 The server is overloaded',
      code: '503',
    })
    const thrown = Object.assign(new Error('429 Rate limit'), { status: 429, headers: { 'retry-after': '2' } })
    expect(modelErrorOf(thrown)).toEqual({ message: '429 Rate limit', code: '429', retryAfterMs: 2_000 })
    expect(retryAfterOf({ 'retry-after-ms': '150' })).toBe(150)
    expect(retryAfterOf({ 'retry-after': new Date(10_000).toUTCString() }, 4_000)).toBe(6_000)
  })
})

describe('defineHarness turn options', () => {
  it('refuses a turn.onModelError that is not a function and a bad maxFinishCycles (ConfigError)', () => {
    const adapter = scriptedModel([])
    expect(() => defineHarness({ name: 'x', adapter, turn: { onModelError: 'retry' as never } })).toThrow(ConfigError)
    expect(() => defineHarness({ name: 'x', adapter, turn: { maxFinishCycles: -1 } })).toThrow(/maxFinishCycles must be an integer/)
  })
})
