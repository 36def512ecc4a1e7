// Key rotation and readers without the key (docs/encryption.md, R26): a new current key seals new
// writes while older keys open what they sealed; a process missing a key fails naming it, never
// garbage; the dashboard shows [encrypted] without the key and the text with it.
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { aesGcmCodec } from '../../src/codec/index.js'
import { createDashboard } from '../../src/dashboard/index.js'
import { CodecKeyMissingError, CodecMissingError } from '../../src/errors/index.js'
import { createHarnessHost } from '../../src/index.js'
import { canary, sealedHarness } from '../fixtures/sealed.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'
import { scanPrefix } from '../helpers/scanRedis.js'
import { rigClient } from '../rig.js'
import { runBin } from '../helpers/cli.js'
import { pino } from 'pino'

const k1 = randomBytes(32)
const k2 = randomBytes(32)

describe('key rotation and readers without the key', () => {
  const hosts = useInProcessHosts()

  /** A host on the same deployment with this codec (no workers): a reader. */
  const reader = (url: string, prefix: string, codec?: ReturnType<typeof aesGcmCodec>) => {
    const host = createHarnessHost({
      redis: url,
      prefix,
      harnesses: [sealedHarness],
      logger: pino({ level: 'silent' }),
      ...(codec ? { codec } : {}),
    })
    hosts.defer(() => host.close())
    return host
  }

  it('R26 rotation: entries under the old key read after the switch, new ones are sealed under the new key; a process missing a key gets the error naming it', async () => {
    const before = hosts.start(sealedHarness, 'rotate', { codec: aesGcmCodec({ keys: { k1 }, current: 'k1' }) })
    const first = before.host.open(sealedHarness, { sessionId: 'rot' })
    expect(await first.runTool({ name: 'echo', input: { note: canary('first') } }, { timeoutMs: 20_000 })).toMatchObject({
      note: canary('first'),
    })
    await before.host.close()

    // the switch: k2 is current, k1 still opens what it sealed
    const after = hosts.start(sealedHarness, 'rotate-after', { redis: before.url, codec: aesGcmCodec({ keys: { k1, k2 }, current: 'k2' }) })
    const rotated = reader(before.url, before.prefix, aesGcmCodec({ keys: { k1, k2 }, current: 'k2' }))
    const session = rotated.open(sealedHarness, { sessionId: 'rot' })
    void after
    const notes = (await session.log.read()).flatMap((e) => (e.record.type === 'harness.tool.requested' ? [e.record.input] : []))
    expect(notes).toEqual([{ note: canary('first') }])
    // a write after the switch (a second request, through the rotated reader's own log) is sealed under k2
    await session.runTool({ name: 'echo', input: { note: canary('second') }, toolCallId: 'second' }, { timeoutMs: 100 }).catch(() => {})
    const redis = rigClient(before.url)
    hosts.defer(() => redis.disconnect())
    const stored = [...(await scanPrefix(redis, before.prefix)).values()].join('\n')
    expect(stored).toMatch(/a1\.k1\./)
    expect(stored).toMatch(/a1\.k2\./)
    const requested = records(await session.log.read(), 'harness.tool.requested').map((r) => r.input)
    expect(requested).toEqual([{ note: canary('first') }, { note: canary('second') }])

    // a process that lacks k1: the error names the key, never garbage
    const lacking = reader(before.url, before.prefix, aesGcmCodec({ keys: { k2 }, current: 'k2' }))
    const error = await lacking
      .open(sealedHarness, { sessionId: 'rot' })
      .log.read()
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(CodecKeyMissingError)
    expect((error as CodecKeyMissingError).keyId).toBe('k1')
    expect((error as Error).message).toContain('k1')
    // a process with no codec at all
    const none = reader(before.url, before.prefix)
    expect(
      await none
        .open(sealedHarness, { sessionId: 'rot' })
        .log.read()
        .catch((e: unknown) => e),
    ).toBeInstanceOf(CodecMissingError)
  }, 60_000)

  it('R26 the dashboard shows [encrypted] where its process has no key, and the text where it has', async () => {
    const codec = aesGcmCodec({ keys: { k1 }, current: 'k1' })
    const { host, url, prefix } = hosts.start(sealedHarness, 'sealed-dashboard', { codec })
    await host
      .open(sealedHarness, { sessionId: 'shown' })
      .runTool({ name: 'echo', input: { note: canary('shown') } }, { timeoutMs: 20_000 })
    const timeline = async (viewer: ReturnType<typeof reader>) => {
      const app = createDashboard({ host: viewer, token: 'tok' })
      const reply = await app.request('/sessions/shown/timeline', { headers: { authorization: 'Bearer tok' } })
      const body = reply.body!.getReader()
      let text = ''
      // the catch-up holds the call's result line; the stream then stays open for more
      while (!/tool.*echo|result/i.test(text) || !text.includes('"kind":"result"')) {
        const { value, done } = await body.read()
        if (done) break
        text += new TextDecoder().decode(value)
      }
      await body.cancel()
      return text
    }
    const withKey = await timeline(reader(url, prefix, codec))
    expect(withKey).toContain(canary('shown'))
    const withoutKey = await timeline(reader(url, prefix))
    expect(withoutKey).not.toContain(canary('shown'))
    expect(withoutKey).toContain('[encrypted]')
    // the session page itself (its questions and the turns' paused reasons, from the conversation)
    const prompted = host.open(sealedHarness, { sessionId: 'shown' })
    await prompted.settled((await prompted.prompt(`hello ${canary('page')}`)).inputId, { timeoutMs: 20_000 })
    const page = async (viewer: ReturnType<typeof reader>) =>
      createDashboard({ host: viewer, token: 'tok' }).request('/sessions/shown', { headers: { authorization: 'Bearer tok' } })
    const withoutKeyPage = await page(reader(url, prefix))
    expect(withoutKeyPage.status).toBe(200)
    expect(await withoutKeyPage.text()).not.toContain(canary('page'))
    expect((await page(reader(url, prefix, codec))).status).toBe(200)
  }, 60_000)

  it('R26 the CLI opens with the codec from DH_CODEC_KEYS: harness log prints the text, harness keys counts the key ids; without it, log fails naming what is missing', async () => {
    const codec = aesGcmCodec({ keys: { k1 }, current: 'k1' })
    const { host, url, prefix } = hosts.start(sealedHarness, 'sealed-cli', { codec })
    await host.open(sealedHarness, { sessionId: 'cli' }).runTool({ name: 'echo', input: { note: canary('cli') } }, { timeoutMs: 20_000 })
    const env = { REDIS_URL: url, DH_PREFIX: prefix, HARNESS_MODULE: 'test/fixtures/sealed.ts' }
    const keys = await runBin(['keys', 'cli', '--json'], env)
    expect(keys.code).toBe(0)
    // the request's input (shared with its job's data), the step's value and the result
    expect(JSON.parse(keys.stdout)).toEqual({ k1: 3 })
    const opened = await runBin(['log', 'cli'], { ...env, DH_CODEC_KEYS: `k1:${k1.toString('base64')}` })
    expect(opened.code).toBe(0)
    expect(opened.stdout).toContain(canary('cli'))
    const refused = await runBin(['log', 'cli'], env)
    expect(refused.code).toBe(1)
    expect(refused.stdout).not.toContain(canary('cli'))
    expect(refused.stderr).toMatch(/encrypted and this process has no codec/)
  }, 60_000)
})
