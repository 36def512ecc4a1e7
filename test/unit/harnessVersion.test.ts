// defineHarness({ version, legacyTools }) (docs/deploys.md): the default version is a stable hash of the
// tools' names and schemas; bad versions and legacy tools are refused with a ConfigError.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness, durableTool } from '../../src/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { toolOfCall } from '../../src/core/index.js'
import { scriptedModel } from '../../src/testing/index.js'

const charge = (schema: z.ZodType) =>
  durableTool(toolDefinition({ name: 'charge', description: 'charge', inputSchema: schema }), async () => ({ ok: true }))
const harness = (options: Partial<Parameters<typeof defineHarness>[0]> = {}) =>
  defineHarness({ name: 'versions', adapter: scriptedModel([]), tools: [charge(z.object({ orderId: z.string() }))], ...options })

describe('harness versions', () => {
  it('the default version is the same for the same tools and schemas, whatever the key order, and changes with a schema', () => {
    expect(harness().version).toMatch(/^h-[0-9a-f]{12}$/)
    expect(harness().version).toBe(harness().version)
    const reordered = charge(z.object({ orderId: z.string(), note: z.string().optional() }))
    const again = charge(z.object({ note: z.string().optional(), orderId: z.string() }))
    expect(harness({ tools: [reordered] }).version).toBe(harness({ tools: [again] }).version)
    expect(harness({ tools: [reordered] }).version).not.toBe(harness().version)
    expect(harness({ version: 'v2.1.0+abc' }).version).toBe('v2.1.0+abc')
  })

  it('refuses a version that is not a short id, and a legacy tool named twice or without execute', () => {
    expect(() => harness({ version: 'has space' })).toThrow(ConfigError)
    expect(() => harness({ version: '' })).toThrow(/version "" must match/)
    const tool = charge(z.object({}))
    expect(() => harness({ legacyTools: [tool] })).toThrow(/"charge" is named twice in tools and legacyTools/)
    expect(() => harness({ legacyTools: [{ name: 'x' } as never] })).toThrow(/legacy tool "x" has no server execute/)
  })

  it('a legacy tool is the tool of a call begun under another version only', () => {
    const old = durableTool(toolDefinition({ name: 'refund', description: 'refund' }), async () => 'ok')
    const h = harness({ legacyTools: [old] })
    expect(toolOfCall(h, 'refund', 'h-older')).toBe(old)
    expect(toolOfCall(h, 'refund', '')).toBe(old) // begun before calls had versions
    expect(toolOfCall(h, 'refund', h.version)).toBeUndefined() // a new call under this version
    expect(toolOfCall(h, 'refund', undefined)).toBeUndefined() // not begun yet
  })
})
