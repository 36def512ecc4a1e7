// Encryption at rest under crashes (docs/encryption.md, R26): with a codec, a worker SIGKILLed between
// two side effects; the next attempt on another worker gets the stored (sealed, then opened) step value
// and runs only the rest, each side effect once. Keys, ids and replay decisions never read ciphertext.
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { aesGcmCodec } from '../../src/codec/index.js'
import { shop } from '../fixtures/shop.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'
import { scanPrefix } from '../helpers/scanRedis.js'

const key = randomBytes(32)

describe('a codec across a SIGKILL mid-call', () => {
  const ctx = useWorkerProcesses({
    label: 'codec-killed',
    workers: 2,
    codec: aesGcmCodec({ keys: { k1: key }, current: 'k1' }),
    env: { DH_CODEC_KEYS: `k1:${key.toString('base64')}` },
  })

  it('R26 a call SIGKILLed after its first step resumes with the stored (decoded) step value, and each side effect ran once', async () => {
    const session = ctx.host.open(shop, { sessionId: 'sealed-killed' })
    const call = session.runTool(
      { name: 'checkout', input: { orderId: 'sk1', pauseMs: 4000 }, toolCallId: 'sealed-1' },
      { timeoutMs: patient(30_000) },
    )
    const runner = await Promise.race(
      ctx.workers.map((w) => w.waitFor((l) => l.toolCallId === 'sealed-1' && l.msg === 'tool call started').then(() => w)),
    )
    for await (const { record } of session.log.follow({ types: ['harness.tool.step'] })) if (record.type === 'harness.tool.step') break
    await runner.kill('SIGKILL')
    // the second attempt returns the first step's stored value (its id names the invoice) and runs the rest once
    expect(await call).toEqual({ chargeId: 'ch_sk1' })
    const billing = await ctx.redis.hgetall(`${ctx.prefix}:billing`)
    expect(billing['charge|sealed-killed:sealed-1:charge:sk1']).toBe('1')
    expect(billing['invoice|sealed-killed:sealed-1:invoice:ch_sk1']).toBe('1')
    const entries = await session.log.read()
    expect(records(entries, 'harness.tool.started').map((r) => [r.attempt, r.reason])).toEqual([
      [1, 'fresh'],
      [2, 'rerun'],
    ])
    expect(records(entries, 'harness.tool.step').map((r) => r.value)).toEqual([{ id: 'ch_sk1' }, undefined])
    // and at rest the step's value and the call's input are sealed (step names are ids: clear by design)
    const stored = [...(await scanPrefix(ctx.redis, ctx.prefix)).values()].join('\n')
    expect(stored).not.toMatch(/id\\*":\\*"ch_sk1/)
    expect(stored).not.toMatch(/orderId/)
  }, 60_000)
})
