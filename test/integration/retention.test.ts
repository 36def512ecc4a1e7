import { describe, expect, it } from 'vitest'
import { createHarnessHost, type RetentionOptions } from '../../src/index.js'
import { RetentionConfigError } from '../../src/errors/index.js'
import { shop } from '../fixtures/shop.js'
import { quiet, useInProcessHosts } from '../helpers/hosts.js'
import { batch, until } from '../helpers/log.js'
import { defaultShards, indexKeys, SessionLog, shardOf } from '../../src/log/index.js'
import { retainOnce, retentionOf } from '../../src/retention/index.js'
import { rigClient, scanKeys } from '../rig.js'
import { patient } from '../helpers/patience.js'

/** The keys of one session (under its shard's hash tag: `<prefix>:{<shard>}:<sid>:…`). */
const keysOf = async (url: string, prefix: string, sessionId: string) =>
  (await scanKeys(url, prefix)).filter((key) => key.includes(`}:${sessionId}:`))

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('retention (docs/retention.md)', () => {
  const hosts = useInProcessHosts()

  it('a bad retention option is refused with RetentionConfigError', () => {
    const bad: unknown[] = [
      { sessionMs: 0, export: () => {} },
      { sessionMs: Number.NaN, export: () => {} },
      { sessionMs: 1000 },
      { sessionMs: 1000, export: () => {}, completedJobsMs: -1 },
    ]
    for (const retention of bad) {
      expect(() =>
        createHarnessHost({ redis: hosts.url(), harnesses: [shop], logger: quiet, retention: retention as RetentionOptions }),
      ).toThrow(RetentionConfigError)
    }
  })

  it('a settled session is exported as JSON Lines, then every key of it is removed; a call parked longer than the retention keeps its session and resumes', async () => {
    const exported = new Map<string, string>()
    const { host, prefix, url } = hosts.start(shop, 'retention', {
      retention: { sessionMs: 200, export: (sessionId, jsonl) => void exported.set(sessionId, jsonl) },
    })
    const settled = host.open(shop, { sessionId: 'r-settled' })
    const { inputId } = await settled.prompt(batch([{ name: 'lookup', input: { sku: 'a' } }]))
    expect((await settled.settled(inputId, { timeoutMs: patient(20_000) })).outcome).toBe('completed')
    const parked = host.open(shop, { sessionId: 'r-parked' })
    const napping = parked.runTool({ name: 'nap', input: { ms: 1500 }, toolCallId: 'long-nap' }, { timeoutMs: patient(30_000) })
    await until(async () => (await parked.log.read({ types: ['harness.tool.suspended'] })).length === 1, 'the nap to park')
    const log = await settled.log.read()

    // passes while the call sleeps past the retention: only the settled session goes
    const removed: string[] = []
    for (let pass = 0; pass < 4; pass++) {
      await pause(250)
      removed.push(...(await host.retain()))
    }
    expect(removed).toEqual(['r-settled'])
    const lines = exported
      .get('r-settled')!
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; record: { type: string } })
    expect(lines.map((l) => [l.id, l.record.type])).toEqual(log.map((e) => [e.id, e.record.type]))
    expect(await keysOf(url, prefix, 'r-settled')).toEqual([])
    expect(await keysOf(url, prefix, 'r-parked')).not.toEqual([])

    // the call woke after more than the retention and lands its result
    expect(await napping).toMatchObject({ slept: expect.any(Number) })
    await pause(250)
    expect(await host.retain()).toEqual(['r-parked'])
    expect(exported.get('r-parked')).toContain('"harness.tool.result"')
    expect(await keysOf(url, prefix, 'r-parked')).toEqual([])
  })

  it('a session whose export throws is kept, and removed by a later pass once the export works', async () => {
    let fail = true
    const { host, prefix, url } = hosts.start(shop, 'retention-export', {
      retention: {
        sessionMs: 100,
        export: () => {
          if (fail) throw new Error('disk full')
        },
      },
    })
    await host.open(shop, { sessionId: 'r-export' }).runTool({ name: 'lookup', input: { sku: 'b' } })
    await pause(150)
    expect(await host.retain()).toEqual([])
    expect(await keysOf(url, prefix, 'r-export')).not.toEqual([])
    fail = false
    await pause(150)
    expect(await host.retain()).toEqual(['r-export'])
    expect(await keysOf(url, prefix, 'r-export')).toEqual([])
  })
  it('a session a prompt makes again right after its removal stays listed, and a later pass exports and removes it again', async () => {
    const { host, prefix, url } = hosts.start(shop, 'retention-race')
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const shards = defaultShards()
    const index = indexKeys(prefix, shardOf('r-race', shards), shards).sessions
    const session = host.open(shop, { sessionId: 'r-race' })
    const first = await session.prompt(batch([{ name: 'lookup', input: { sku: 'a' } }]))
    expect((await session.settled(first.inputId, { timeoutMs: patient(20_000) })).outcome).toBe('completed')

    // the pass, run here with a hook: the prompt comes right after the removal, before the pass goes on
    let again: { inputId: string } | undefined
    const logFor = (sessionId: string) => {
      const log = new SessionLog(redis, prefix, sessionId, { shards })
      const remove = log.stream.removeSession.bind(log.stream)
      log.stream.removeSession = async (mode, exportedLastId) => {
        const reply = await remove(mode, exportedLastId)
        if (mode === 'remove' && reply[0] === 'removed') again = await session.prompt('hello again')
        return reply
      }
      return log
    }
    const exported: string[] = []
    const deps = {
      redis,
      prefix,
      shards,
      logFor,
      logger: quiet,
      retention: retentionOf({ sessionMs: 1_000, export: (sid) => void exported.push(sid) }),
    }
    expect(await retainOnce(deps, { now: Date.now() + 60_000 })).toEqual(['r-race'])
    expect(again).toBeDefined()
    // made again after the removal: listed, so retention sees it again
    expect(await redis.zscore(index, 'r-race')).not.toBeNull()
    expect((await session.settled(again!.inputId, { timeoutMs: patient(20_000) })).outcome).toBe('completed')
    const plain = { ...deps, logFor: (sessionId: string) => new SessionLog(redis, prefix, sessionId, { shards }) }
    expect(await retainOnce(plain, { now: Date.now() + 60_000 })).toEqual(['r-race'])
    expect(exported).toEqual(['r-race', 'r-race'])
    expect(await keysOf(url, prefix, 'r-race')).toEqual([])
    expect(await redis.zscore(index, 'r-race')).toBeNull()
  })
})
