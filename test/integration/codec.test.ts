// Data at rest (docs/encryption.md, R26): with a codec, nothing a user or a model wrote is readable in
// Redis. A turn with a step, a sleep, an ask, an event wait and an app record, canaries in every user
// field: a scan of every key under the prefix finds none with the codec, and each one without it.
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { aesGcmCodec, type PayloadCodec } from '../../src/codec/index.js'
import { SessionLog } from '../../src/log/index.js'
import { CodecMissingError } from '../../src/errors/index.js'
import { replaySession } from '../../src/testing/index.js'
import { canary, CANARY_PATTERN, sealedHarness } from '../fixtures/sealed.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { findCanaries, scanPrefix } from '../helpers/scanRedis.js'
import { rigClient } from '../rig.js'

const FIELDS = [
  'input',
  'thinking',
  'step',
  'question',
  'reason',
  'event',
  'kept',
  'record',
  'result',
  'answer',
  'prompt',
  'context',
  'tool',
  'direct',
]

describe('encryption at rest', () => {
  const hosts = useInProcessHosts()

  /** Runs the whole turn on a host with `codec` (or none) and returns the canaries a scan of Redis finds. */
  async function runTurn(label: string, codec?: PayloadCodec) {
    const { host, prefix, url } = hosts.start(sealedHarness, label, codec ? { codec } : {})
    const session = host.open(sealedHarness, { sessionId: 'order-1' })
    const { inputId } = await session.prompt(`vault:o-1 ${canary('prompt')}`, { context: { note: canary('context') } })
    let questionId = ''
    await until(
      async () => {
        questionId = (await session.questions())[0]?.questionId ?? ''
        return questionId !== ''
      },
      'the approval question',
      20_000,
    )
    await session.answer(questionId, { ok: true, reason: canary('reason') })
    // kept for the wait until it registers, if it has not yet
    await host.sendEvent({ event: 'payment.settled', key: 'o-1', payload: { ref: canary('event') } })
    // an event nobody waits for is kept (its payload too), and a runTool call starts on this process's lane
    await host.sendEvent({ event: 'payment.settled', key: 'o-nobody', payload: { ref: canary('kept') } })
    expect(await session.runTool({ name: 'echo', input: { note: canary('tool') } }, { timeoutMs: 20_000 })).toEqual({
      note: canary('tool'),
      stepped: canary('direct'),
    })
    const settled = await session.settled(inputId, { timeoutMs: 20_000 })
    expect(settled).toMatchObject({ outcome: 'completed', text: canary('answer') })
    // every reader decodes: the log as written
    const entries = await session.log.read()
    const result = records(entries, 'harness.tool.result').find((r) => r.name === 'vault')
    expect(result?.result).toMatchObject({ result: canary('result'), charge: { receipt: canary('step') } })
    expect(records(entries, 'harness.input')[0]?.text).toContain(canary('prompt'))
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    // a schedule's prompt (its template in BullMQ), shown as it was written
    await host.schedule({ id: 'nightly', harness: sealedHarness, every: '1h', prompt: canary('schedule'), sessionId: 'scheduled' })
    expect((await host.schedules()).map((s) => s.prompt)).toEqual([canary('schedule')])
    // its first tick prompts at once, with the prompt opened
    const scheduled = host.open(sealedHarness, { sessionId: 'scheduled' })
    await until(async () => records(await scheduled.log.read(), 'harness.input').length > 0, 'the first tick', 20_000)
    expect(records(await scheduled.log.read(), 'harness.input')[0]?.text).toBe(canary('schedule'))
    const stored = await scanPrefix(redis, prefix)
    // the export retention writes: the records as stored
    stored.set('(export)', (await new SessionLog(redis, prefix, 'order-1', { shards: 1 }).stream.exportJsonl()).jsonl)
    return findCanaries(stored, CANARY_PATTERN)
  }

  it('R26 with a codec no canary of any user or model field is in Redis; without it each one is (so the scan can fail)', async () => {
    const plain = await runTurn('sealed-plain')
    for (const field of FIELDS) expect([...plain.keys()], field).toContain(canary(field))
    const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })
    const sealed = await runTurn('sealed-codec', codec)
    expect(Object.fromEntries(sealed)).toEqual({})
  }, 60_000)

  it('R26 replaySession (check-deploy) opens a sealed session with the codec, and without it fails naming what is missing', async () => {
    const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })
    const { host, prefix, url } = hosts.start(sealedHarness, 'sealed-replay', { codec })
    const session = host.open(sealedHarness, { sessionId: 'replayed' })
    await session.prompt('vault:o-2')
    await until(async () => (await session.questions()).length > 0, 'the call to park on its question', 20_000)
    const report = await replaySession({ redis: url, prefix, sessionId: 'replayed', harness: sealedHarness, codec })
    expect(report.problems).toEqual([])
    expect(report.calls).toBe(1)
    await expect(replaySession({ redis: url, prefix, sessionId: 'replayed', harness: sealedHarness })).rejects.toBeInstanceOf(
      CodecMissingError,
    )
  }, 60_000)
})
