// A RetryAfterError's `after` (R16): a negative delay or a past Date is now (a provider's clock runs
// ahead of ours); NaN, an infinite delay or one over 365 days is refused where it is thrown.
import { describe, expect, it } from 'vitest'
import { RetryAfterError } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { afterFailedTry, checkRetryPolicy } from '../../src/tool/retry.js'

const policy = checkRetryPolicy({ attempts: 5, delay: '1m', backoff: 'constant' }, 'test')!
const DAY = 86_400_000

describe('RetryAfterError', () => {
  it.each([
    ['a negative delay', -3_000],
    ['a negative duration string', '-3s'],
    ['a Date in the past', new Date(Date.now() - 60_000)],
    ['a zero delay', 0],
  ] as Array<[string, number | string | Date]>)('R16: %s is a retry now, not a config error', (_, after) => {
    const error = new RetryAfterError('rate limited', after as number)
    expect(error.retryAt).toBe(error.thrownAt)
    const verdict = afterFailedTry(policy, 1, error, error.thrownAt)
    expect(verdict).toEqual({ retry: true, nextAt: error.thrownAt })
  })

  it('a delay counts from the throw; a Date is its own time', () => {
    const delayed = new RetryAfterError('later', '2s')
    expect(delayed.retryAt).toBe(delayed.thrownAt + 2_000)
    const at = new Date(Date.now() + 5 * 60_000)
    expect(new RetryAfterError('later', at).retryAt).toBe(at.getTime())
    expect(new RetryAfterError('a year', 365 * DAY).retryAt - Date.now()).toBeGreaterThan(364 * DAY)
  })

  it.each([
    ['NaN', Number.NaN, /got NaN/],
    ['an infinite delay', Number.POSITIVE_INFINITY, /got Infinity/],
    ['minus infinity', Number.NEGATIVE_INFINITY, /got -Infinity/],
    ['over 365 days', 366 * DAY, /at most 365 days/],
    ['a string that is no duration', 'soon', /got "soon"/],
    ['an invalid Date', new Date(Number.NaN), /got an invalid Date/],
    ['a Date over 365 days ahead', new Date(Date.now() + 400 * DAY), /at most 365 days/],
  ] as Array<[string, number | string | Date, RegExp]>)('%s is refused at construction with a ConfigError saying why', (_, after, why) => {
    const make = () => new RetryAfterError('rate limited', after as number)
    expect(make).toThrow(ConfigError)
    expect(make).toThrow(/RetryAfterError "rate limited": `after` must be/)
    expect(make).toThrow(why)
  })
})
