// host.turns (issue 27): the turns indexes the status scripts write, paged over shards with a cursor;
// filters by status, harness, time, tags (the tag indexes addInput writes) and tool (the tool indexes
// logModelResponse writes); bad filters refused; retention cleans every index; host.cancel by filter.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool } from '../../src/index.js'
import type { TurnSummary } from '../../src/entries/ops.js'
import { InvalidTurnFilterError } from '../../src/errors/index.js'
import { SessionLog, shardOf, turnIndexKey, turnTagIndexKey, turnToolIndexKey } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { quiet, useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { rigClient } from '../rig.js'

const plain = defineHarness({ name: 'plain', adapter: scriptedModel([{ text: 'done' }]) })
const other = defineHarness({ name: 'other', adapter: scriptedModel([{ text: 'done' }]) })
const napper = defineHarness({
  name: 'napper',
  adapter: scriptedModel([{ toolCalls: [{ name: 'longNap', input: {} }] }, { text: 'woke' }]),
  tools: [
    durableTool(toolDefinition({ name: 'longNap', description: 'Naps a day', inputSchema: z.object({}) }), async (_input, { step }) => {
      await step.sleep('nap', 24 * 3600_000)
      return 'rested'
    }),
  ],
})
const clerk = defineHarness({
  name: 'clerk',
  adapter: scriptedModel([{ toolCalls: [{ name: 'stamp', input: {} }] }, { text: 'stamped' }]),
  tools: [durableTool(toolDefinition({ name: 'stamp', description: 'Stamps', inputSchema: z.object({}) }), async () => 'ok')],
})
const SHARDS = 3

describe('host.turns', () => {
  const hosts = useInProcessHosts()

  /** Sessions of one turn each, through the scripts a prompt and a settle run (no workers needed). */
  async function populate(url: string, prefix: string) {
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const made: Array<{ sessionId: string; harness: string; outcome: 'completed' | 'failed' | 'open' }> = []
    for (let i = 0; i < 30; i++) {
      const harness = i % 5 === 0 ? 'other' : 'plain'
      const log = new SessionLog(redis, prefix, `t-${i}`, { shards: SHARDS })
      const metadata = { team: i % 2 === 0 ? 'even' : 'odd', ...(i === 0 ? { rare: 'yes' } : {}) }
      await log.inputs.addInput('in-1', `order ${i}`, harness, { metadata, principal: `u${i}` })
      // every fourth turn called refund (and lookup), the others lookup alone
      const tools = i % 4 === 0 ? ['refund', 'lookup', 'refund'] : ['lookup']
      await log.inputs.logModelResponse(
        'in-1',
        { toolCalls: tools.map((name, n) => ({ toolCallId: `c${n}`, name, input: {} })) },
        0,
        harness,
      )
      const outcome = i % 3 === 0 ? 'failed' : i % 3 === 1 ? 'completed' : 'open'
      if (outcome !== 'open') await log.inputs.settle({ type: 'harness.input.settled', inputId: 'in-1', outcome }, harness)
      made.push({ sessionId: `t-${i}`, harness, outcome })
      await new Promise((resolve) => setTimeout(resolve, 2)) // distinct times, and some ties
    }
    return made
  }

  const all = async (list: (cursor?: string) => Promise<{ items: TurnSummary[]; cursor?: string }>) => {
    const items: TurnSummary[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await list(cursor)
      items.push(...page.items)
      cursor = page.cursor
      pages++
    } while (cursor)
    return { items, pages }
  }

  it('pages every index of the filter over the shards, newest first, each turn once; by status, harness, time and tag', async () => {
    const url = hosts.url()
    const prefix = `turns-${Date.now()}`
    const host = createHarnessHost({ redis: url, harnesses: [plain, other], prefix, shards: SHARDS, logger: quiet })
    hosts.defer(() => host.close())
    const start = Date.now()
    const made = await populate(url, prefix)
    const failed = made.filter((m) => m.outcome === 'failed').map((m) => m.sessionId)

    const paged = await all((cursor) => host.turns({ status: 'failed', limit: 3, ...(cursor ? { cursor } : {}) }))
    expect(paged.items.map((t) => t.sessionId).sort()).toEqual([...failed].sort())
    expect(paged.pages).toBeGreaterThanOrEqual(4)
    const times = paged.items.map((t) => t.at)
    expect(times).toEqual([...times].sort((a, b) => b - a))
    expect(paged.items[0]).toMatchObject({
      status: 'failed',
      inputId: 'in-1',
      principal: expect.stringMatching(/^u\d+$/),
      metadata: { team: expect.any(String) },
    })

    // every status at once, one harness, a tag
    expect((await all((cursor) => host.turns({ limit: 7, ...(cursor ? { cursor } : {}) }))).items).toHaveLength(30)
    const others = (await host.turns({ harness: 'other', limit: 100 })).items
    expect(others.map((t) => t.sessionId).sort()).toEqual(
      made
        .filter((m) => m.harness === 'other')
        .map((m) => m.sessionId)
        .sort(),
    )
    const evenFailed = (
      await all((cursor) => host.turns({ status: 'failed', metadata: { team: 'even' }, limit: 2, ...(cursor ? { cursor } : {}) }))
    ).items
    expect(evenFailed.map((t) => t.sessionId).sort()).toEqual(failed.filter((id) => Number(id.slice(2)) % 2 === 0).sort())
    expect((await host.turns({ status: 'open', limit: 100 })).items).toHaveLength(made.filter((m) => m.outcome === 'open').length)

    // a time window: the newest failed turn alone
    const newest = paged.items[0]!
    const window = await host.turns({ status: 'failed', since: newest.at, until: new Date(newest.at) })
    expect(window.items.map((t) => t.sessionId)).toContain(newest.sessionId)
    expect((await host.turns({ status: 'failed', until: start - 1 })).items).toEqual([])
  })

  it('tool filter: the tool index, paged over the shards with a cursor, each turn once; combined with status, harness, tags', async () => {
    const url = hosts.url()
    const prefix = `turns-tool-${Date.now()}`
    const host = createHarnessHost({ redis: url, harnesses: [plain, other], prefix, shards: SHARDS, logger: quiet })
    hosts.defer(() => host.close())
    const made = await populate(url, prefix)
    const ids = (keep: (i: number, m: (typeof made)[number]) => boolean) =>
      made
        .filter((m, i) => keep(i, m))
        .map((m) => m.sessionId)
        .sort()
    const sorted = (items: TurnSummary[]) => items.map((t) => t.sessionId).sort()

    const refunds = await all((cursor) => host.turns({ tool: 'refund', limit: 2, ...(cursor ? { cursor } : {}) }))
    expect(sorted(refunds.items)).toEqual(ids((i) => i % 4 === 0))
    expect(refunds.pages).toBeGreaterThanOrEqual(4)
    // newest prompted first, each with its status and the time it entered it
    expect(refunds.items[0]).toMatchObject({ sessionId: 't-28', inputId: 'in-1', status: 'completed' })
    const completed = (await host.turns({ status: 'completed', limit: 100 })).items.find((t) => t.sessionId === 't-28')!
    expect(refunds.items[0]!.at).toBe(completed.at)
    expect((await all((cursor) => host.turns({ tool: 'lookup', limit: 7, ...(cursor ? { cursor } : {}) }))).items).toHaveLength(30)

    expect(sorted((await host.turns({ tool: 'refund', status: 'failed' })).items)).toEqual(
      ids((i, m) => i % 4 === 0 && m.outcome === 'failed'),
    )
    expect(sorted((await host.turns({ tool: 'refund', harness: 'other' })).items)).toEqual(
      ids((i, m) => i % 4 === 0 && m.harness === 'other'),
    )
    expect(sorted((await host.turns({ tool: 'lookup', metadata: { team: 'odd' }, status: 'open' })).items)).toEqual(
      ids((i, m) => i % 2 === 1 && m.outcome === 'open'),
    )
    expect((await host.turns({ tool: 'neverCalled' })).items).toEqual([])

    // one write: the turn is in the tool index of its shard, once per tool however often it was called
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const shard = shardOf('t-4', SHARDS)
    expect(await redis.zscore(turnToolIndexKey(prefix, shard, SHARDS, 'plain', 'refund'), 't-4|in-1')).not.toBeNull()
    expect(await redis.zscore(turnToolIndexKey(prefix, shard, SHARDS, 'plain', 'refund'), 't-5|in-1')).toBeNull()

    // a model's tool name is hostile: any character is a key part like another; a lone surrogate (cjson cannot read it) is not indexed
    const odd = new SessionLog(redis, prefix, 'odd-name', { shards: SHARDS })
    await odd.inputs.addInput('in-1', 'x', 'plain')
    const names = ['a:b}{ %0025', 'lone\uD800']
    const toolCalls = names.map((name, n) => ({ toolCallId: `c${n}`, name, input: {} }))
    expect(await odd.inputs.logModelResponse('in-1', { toolCalls }, 0, 'plain')).toHaveLength(2)
    expect((await host.turns({ tool: names[0]! })).items).toMatchObject([{ sessionId: 'odd-name', status: 'open' }])
    expect((await host.turns({ tool: 'a:b}{ %25' })).items).toEqual([])
    expect((await host.turns({ tool: names[1]! })).items).toEqual([])
  })

  it('metadata filter: read from the tag index, so a rare tag is found on the first page however many turns are newer', async () => {
    const url = hosts.url()
    const prefix = `turns-tag-${Date.now()}`
    const host = createHarnessHost({ redis: url, harnesses: [plain, other], prefix, shards: SHARDS, logger: quiet })
    hosts.defer(() => host.close())
    await populate(url, prefix)
    // t-0 is the oldest of 30 turns: checking the status indexes' turns (at most 20 a page of 1) would end this page empty
    const first = await host.turns({ metadata: { rare: 'yes' }, limit: 1 })
    expect(first.items).toMatchObject([{ sessionId: 't-0', harness: 'other', status: 'failed', metadata: { team: 'even', rare: 'yes' } }])
    expect(first.items[0]!.at).toBe((await host.turns({ status: 'failed', harness: 'other', limit: 100 })).items.at(-1)!.at)
    expect((await host.turns({ metadata: { rare: 'yes' }, status: 'completed' })).items).toEqual([])
    expect((await host.turns({ metadata: { rare: 'yes', team: 'odd' } })).items).toEqual([])
    expect((await host.turns({ metadata: { rare: 'no' } })).items).toEqual([])

    const odd = await all((cursor) => host.turns({ metadata: { team: 'odd' }, limit: 4, ...(cursor ? { cursor } : {}) }))
    expect(odd.items.map((t) => t.sessionId).sort()).toEqual(Array.from({ length: 15 }, (_, n) => `t-${2 * n + 1}`).sort())
    expect(odd.pages).toBeGreaterThanOrEqual(4)

    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    expect(await redis.zcard(turnTagIndexKey(prefix, shardOf('t-0', SHARDS), SHARDS, 'other', 'rare', 'yes'))).toBe(1)
    // a cursor goes on with the plan of its first page; under another filter it is refused
    const tagged = await host.turns({ metadata: { team: 'odd' }, limit: 1 })
    await expect(host.turns({ status: 'failed', cursor: tagged.cursor! })).rejects.toBeInstanceOf(InvalidTurnFilterError)
  })

  it('refuses a filter it cannot answer with InvalidTurnFilterError', async () => {
    const host = createHarnessHost({ redis: hosts.url(), harnesses: [plain], prefix: `turns-bad-${Date.now()}`, logger: quiet })
    hosts.defer(() => host.close())
    const bad = [
      { status: 'broken' },
      { harness: 'nope' },
      { limit: 0 },
      { limit: 5_000 },
      { cursor: 'not-a-cursor' },
      { since: Number.NaN },
      { tool: '' },
      { tool: 7 },
      { metadata: { team: 5 } },
      { metadata: ['x'] },
    ]
    for (const filter of bad) await expect(host.turns(filter as never)).rejects.toBeInstanceOf(InvalidTurnFilterError)
    expect(() => host.replay({ status: 'open' })).toThrow(InvalidTurnFilterError)
    expect(() => host.cancel({ status: 'completed' })).toThrow(InvalidTurnFilterError)
  })

  it('retention takes a removed session out of the turns indexes in the same write', async () => {
    const { host, prefix, url } = hosts.start(plain, 'turns-retention', { retention: { sessionMs: 100, export: () => {} } })
    const session = host.open(plain, { sessionId: 'gone-1' })
    const { inputId } = await session.prompt('hi')
    expect((await session.settled(inputId)).outcome).toBe('completed')
    expect((await host.turns({ status: 'completed' })).items).toHaveLength(1)
    await until(
      async () => (await host.retain()).includes('gone-1') || (await host.turns({ status: 'completed' })).items.length === 0,
      'the session to be removed',
    )
    expect((await host.turns({})).items).toEqual([])
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    expect(await redis.exists(turnIndexKey(prefix, 0, 1, 'plain', 'completed'))).toBe(0)
  })

  it('retention takes a removed session out of the tool and tag indexes in the same write', async () => {
    const { host, prefix, url } = hosts.start(clerk, 'turns-retention-idx', { retention: { sessionMs: 100, export: () => {} } })
    const session = host.open(clerk, { sessionId: 'gone-2' })
    const { inputId } = await session.prompt('stamp it', { metadata: { desk: 'a' } })
    expect((await session.settled(inputId)).outcome).toBe('completed')
    expect((await host.turns({ tool: 'stamp' })).items).toMatchObject([{ sessionId: 'gone-2', status: 'completed' }])
    expect((await host.turns({ metadata: { desk: 'a' } })).items).toHaveLength(1)
    await until(
      async () => (await host.retain()).includes('gone-2') || (await host.turns({ tool: 'stamp' })).items.length === 0,
      'the session to be removed',
    )
    expect((await host.turns({ tool: 'stamp' })).items).toEqual([])
    expect((await host.turns({ metadata: { desk: 'a' } })).items).toEqual([])
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    expect(await redis.exists(turnToolIndexKey(prefix, 0, 1, 'clerk', 'stamp'), turnTagIndexKey(prefix, 0, 1, 'clerk', 'desk', 'a'))).toBe(
      0,
    )
  })

  it('host.cancel aborts every open turn the filter finds, their parked calls cancelled; again: none', async () => {
    const { host } = hosts.start(napper, 'turns-cancel')
    const sessions = Array.from({ length: 5 }, (_, i) => host.open(napper, { sessionId: `nap-${i}` }))
    const inputs = await Promise.all(sessions.map((s) => s.prompt('nap', { metadata: { batch: 'b1' } })))
    await until(async () => (await host.stats()).parkedCalls === 5, 'every nap to park')
    const progress: number[] = []
    expect(
      await host.cancel(
        { status: 'open', metadata: { batch: 'b1' } },
        { batch: 2, principal: 'ops', onProgress: (p) => progress.push(p.done) },
      ),
    ).toEqual({ count: 5 })
    expect(progress.at(-1)).toBe(5)
    for (const [i, s] of sessions.entries()) expect(await s.settled(inputs[i]!.inputId)).toMatchObject({ outcome: 'aborted' })
    expect(await host.cancel({ status: 'open' })).toEqual({ count: 0 })
    expect((await host.turns({ status: 'aborted', harness: 'napper' })).items).toHaveLength(5)
  })
})
