// Shard placement: stable, spread over the slots, and refusing a shard that does not exist (whose tag
// search would otherwise never end).
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/errors/index.js'
import { shardOf, shardTag } from '../../src/log/shards.js'

describe('shards', () => {
  it('a session maps to the same shard every time, and each shard of 3 gets its own tag', () => {
    expect(shardOf('order-42', 3)).toBe(shardOf('order-42', 3))
    expect(new Set([0, 1, 2].map((s) => shardTag(s, 3))).size).toBe(3)
  })

  it('a shard outside 0..shards-1, or a bad shard count, is a ConfigError, not an endless search', () => {
    for (const [shard, shards] of [
      [3, 3],
      [-1, 3],
      [0.5, 3],
      [undefined, undefined],
      [0, 0],
    ] as Array<[number, number]>) {
      expect(() => shardTag(shard, shards)).toThrow(ConfigError)
    }
  })
})
