import { expectTypeOf, test } from 'vitest'
import { getRedisUrl, uniquePrefix } from '../rig.js'

test('rig signatures', () => {
  expectTypeOf(getRedisUrl).returns.toEqualTypeOf<Promise<string>>()
  // @ts-expect-error the label is a string, not a number
  uniquePrefix(42)
})
