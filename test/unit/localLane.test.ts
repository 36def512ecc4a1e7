import { describe, expect, it } from 'vitest'
import { ConfigError, UnverifiedBullmqError } from '../../src/errors/index.js'
import { createLocalLane, localLaneEnabled } from '../../src/lane/index.js'
import { assertVerifiedBullmq, installedBullmq } from '../../src/lane/bullmqInternals.js'

describe('the local lane switch (HostOptions.localLane, DH_LOCAL_LANE)', () => {
  it('on by default; DH_LOCAL_LANE=off turns it off; the host option wins over the variable', () => {
    expect(localLaneEnabled(undefined, undefined)).toBe(true)
    expect(localLaneEnabled(undefined, 'on')).toBe(true)
    expect(localLaneEnabled(undefined, ' OFF ')).toBe(false)
    expect(localLaneEnabled(false, 'on')).toBe(false)
    expect(localLaneEnabled(true, 'off')).toBe(true)
  })

  it('a DH_LOCAL_LANE other than on or off is a ConfigError naming the value', () => {
    expect(() => localLaneEnabled(undefined, 'no')).toThrow(ConfigError)
    expect(() => localLaneEnabled(undefined, 'no')).toThrow(/DH_LOCAL_LANE="no": use "on" or "off"/)
  })
})

describe('the lane refuses a bullmq it was not verified with', () => {
  it('the installed bullmq passes', () => {
    expect(() => assertVerifiedBullmq(installedBullmq)).not.toThrow()
    expect(createLocalLane(true).enabled).toBe(true)
  })

  it('another version: UnverifiedBullmqError with the version found, the range verified and how to turn the lane off', () => {
    for (const version of ['6.8.0', '7.0.0', '6.70.1', '5.7.0']) {
      const refused = (() => {
        try {
          createLocalLane(true, version)
        } catch (error) {
          return error
        }
      })()
      expect(refused).toBeInstanceOf(UnverifiedBullmqError)
      expect(refused).toMatchObject({ code: 'config', found: version, verified: '6.7.x' })
      expect((refused as Error).message).toContain(`the installed bullmq is ${version}`)
      expect((refused as Error).message).toContain('localLane: false')
      expect((refused as Error).message).toContain('DH_LOCAL_LANE=off')
    }
    expect(() => assertVerifiedBullmq('6.7.12')).not.toThrow()
  })

  it('the lane off: any bullmq is accepted (nothing of its private layout is used)', () => {
    expect(createLocalLane(false, '7.0.0').enabled).toBe(false)
  })
})
