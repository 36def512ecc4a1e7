// Encryption at rest across a Redis restart (R26, docs/encryption.md): the codec keeps no state of its
// own in Redis, and what it sealed comes back from the AOF as written: a call parked on its question
// before Redis is SIGKILLed resumes after the restart with its stored step value opened, and the
// answer given after the restart lands sealed too.
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { aesGcmCodec } from '../../src/codec/index.js'
import { canary, sealedHarness } from '../fixtures/sealed.js'
import { crashRedis, useInProcessHosts, usePrivateRedis } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { scanPrefix } from '../helpers/scanRedis.js'
import { rigClient } from '../rig.js'

describe('a codec across a Redis restart', () => {
  const hosts = useInProcessHosts()
  const privateRedis = usePrivateRedis()

  it('R26 sealed values come back from the AOF as written: the parked call resumes after a Redis SIGKILL with its step value opened', async () => {
    const server = privateRedis()
    const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })
    const { host, prefix } = hosts.start(sealedHarness, 'codec-restart', { redis: server.url, codec })
    const redis = rigClient(server.url, { maxRetriesPerRequest: null })
    redis.on('error', () => {})
    hosts.defer(() => redis.disconnect())
    const session = host.open(sealedHarness, { sessionId: 'restart' })
    const { inputId } = await session.prompt('vault:o-9')
    await until(async () => (await session.questions()).length > 0, 'the approval question', 30_000)

    await crashRedis(server)
    await until(
      async () =>
        session
          .questions()
          .then((q) => q.length > 0)
          .catch(() => false),
      'the question read back after the restart',
      30_000,
    )
    const [question] = await session.questions()
    expect(question!.message).toBe(canary('question'))
    await session.answer(question!.questionId, { ok: true, reason: canary('reason') })
    await host.sendEvent({ event: 'payment.settled', key: 'o-9', payload: { ref: canary('event') } })
    expect(await session.settled(inputId, { timeoutMs: 30_000 })).toMatchObject({ outcome: 'completed', text: canary('answer') })
    const result = records(await session.log.read(), 'harness.tool.result').find((r) => r.name === 'vault')
    expect(result?.result).toMatchObject({ charge: { receipt: canary('step') }, approval: { reason: canary('reason') } })
    const stored = [...(await scanPrefix(redis, prefix)).values()].join('\n')
    expect(stored).not.toMatch(/CANARY-/)
  }, 90_000)
})
