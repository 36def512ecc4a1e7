// The text a machine-event address is hashed from (src/log/eventAddress.ts) is one-to-one across its
// three forms (unscoped without a NUL, unscoped with one, session-scoped), and a NUL-free unscoped
// pair keeps the text older versions hashed.
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { InvalidEventAddressError } from '../../src/errors/index.js'
import { assertEventAddressPart, eventAddressId, type EventAddress } from '../../src/log/index.js'

describe('event address ids', () => {
  it('differ for addresses that a plain join would merge, across the three forms', () => {
    const addresses: EventAddress[] = [
      { event: 'ev', key: 'a\0b' },
      { event: 'ev\0a', key: 'b' },
      { event: 'ev\0a\0b', key: 'x' },
      { event: '2', key: 'ev\0a\0b' },
      { event: 'ev', key: 'a' },
      { event: 'ev\0a', key: 'b', sessionId: 's1' },
      { event: 'ev', key: 'a\0b', sessionId: 's1' },
      { event: 'ev', key: 'a', sessionId: 's1' },
      { event: 'ev', key: 'a', sessionId: 's2' },
      // an unscoped pair shaped like a scoped text, and like a length-prefixed one
      { event: 's', key: 's1\x002\0ev\0a' },
      { event: '2', key: 'ev\0a' },
      { event: 's', key: 's1' },
    ]
    const ids = addresses.map(eventAddressId)
    expect(new Set(ids).size).toBe(addresses.length)
  })

  it('an unscoped pair without a NUL hashes the text older versions wrote', () => {
    const old = createHash('sha256').update('payment.settled\0order-1').digest('hex').slice(0, 20)
    expect(eventAddressId({ event: 'payment.settled', key: 'order-1' })).toBe(old)
  })

  it('a part that is empty, too long or has a lone surrogate is refused with what is wrong', () => {
    const refused = (value: unknown) => {
      try {
        assertEventAddressPart('host.sendEvent', 'key', value)
        return ''
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidEventAddressError)
        return (error as Error).message
      }
    }
    expect(refused('k'.repeat(1_000))).toBe('')
    expect(refused('k'.repeat(1_001))).toContain('the key is 1,001 characters long (at most 1,000)')
    expect(refused('')).toContain('the key is empty')
    expect(refused(42)).toContain('is missing')
    expect(refused('a\uD800b')).toContain('lone UTF-16 surrogate')
    expect(refused('😀')).toBe('')
  })
})
