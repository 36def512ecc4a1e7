// Durations of step.sleep: '90s', '15m', '2h', '3d' or ms; at most 365 days.
import { describe, expect, it } from 'vitest'
import { InvalidDurationError } from '../../src/errors/index.js'
import { checkSleepMs, MAX_SLEEP_MS, parseDuration, parseWakeTime, type Duration } from '../../src/tool/duration.js'

const DAY = 86_400_000

describe('parseDuration', () => {
  it.each([
    ['90s', 90_000],
    ['15m', 900_000],
    ['2h', 7_200_000],
    ['3d', 3 * DAY],
    ['250ms', 250],
    ['1.5s', 1_500],
    ['0s', 0],
    ['365d', 365 * DAY],
    [' 2h ', 7_200_000],
  ] as Array<[string, number]>)('%j is %d ms', (text, ms) => {
    expect(parseDuration(text as Duration)).toBe(ms)
  })

  it('numbers are ms, rounded to whole ms, up to 365 days', () => {
    expect(parseDuration(1_500)).toBe(1_500)
    expect(parseDuration(0)).toBe(0)
    expect(parseDuration(10.4)).toBe(10)
    expect(parseDuration(MAX_SLEEP_MS)).toBe(365 * DAY)
  })

  it.each([
    ['a negative number', -1, 'negative'],
    ['NaN', Number.NaN, 'not a number'],
    ['Infinity', Number.POSITIVE_INFINITY, 'over 365 days'],
    ['one ms over 365 days', MAX_SLEEP_MS + 1, 'over 365 days'],
    ['366d', '366d', 'over 365 days'],
    ['8761h', '8761h', 'over 365 days'],
    ['a negative string', '-5s', 'not a number of ms or a string like 90s'],
    ['garbage', 'soon', 'not a number of ms or a string like 90s'],
    ['an unknown unit', '5w', 'not a number of ms or a string like 90s'],
    ['words', '5 minutes', 'not a number of ms or a string like 90s'],
    ['a bare number string', '100', 'not a number of ms or a string like 90s'],
    ['an empty string', '', 'not a number of ms or a string like 90s'],
    ['null', null, 'not a number of ms or a string like 90s'],
    ['undefined', undefined, 'not a number of ms or a string like 90s'],
  ] as Array<[string, unknown, string]>)('refuses %s with InvalidDurationError', (_label, value, why) => {
    const parse = () => parseDuration(value as Duration)
    expect(parse).toThrow(InvalidDurationError)
    expect(parse).toThrow(why)
    try {
      parse()
    } catch (error) {
      expect((error as InvalidDurationError).code).toBe('invalid_duration')
      expect((error as Error).message).toContain(`Invalid sleep ${JSON.stringify(value)}`)
      expect((error as Error).message).toContain('up to 365 days')
    }
  })

  it('checkSleepMs refuses a value that is not a number at all', () => {
    expect(() => checkSleepMs('5' as unknown as number, '5')).toThrow(InvalidDurationError)
  })
})

describe('parseWakeTime', () => {
  const now = Date.UTC(2030, 0, 1)

  it('takes a Date or epoch ms and returns epoch ms', () => {
    expect(parseWakeTime(new Date(now + 60_000), now)).toBe(now + 60_000)
    expect(parseWakeTime(now + 5, now)).toBe(now + 5)
  })

  it('a time in the past is fine (no wait)', () => {
    expect(parseWakeTime(now - DAY, now)).toBe(now - DAY)
  })

  it('refuses more than 365 days ahead, NaN and an invalid Date', () => {
    expect(parseWakeTime(now + MAX_SLEEP_MS, now)).toBe(now + MAX_SLEEP_MS)
    expect(() => parseWakeTime(now + MAX_SLEEP_MS + 1, now)).toThrow('over 365 days')
    expect(() => parseWakeTime(Number.NaN, now)).toThrow(InvalidDurationError)
    expect(() => parseWakeTime(new Date('not a date'), now)).toThrow('not a date')
  })
})
