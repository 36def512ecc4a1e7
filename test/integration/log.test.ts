import { Redis, type RedisOptions } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { FencedError, InvalidIdError, InvalidRecordError, MalformedEntryError } from '../../src/errors/index.js'
import {
  defaultShards,
  eventTimerOf,
  followLog,
  openMember,
  SessionLog,
  shardBase,
  type LogEntry,
  type LogRecord,
  type RedisClient,
} from '../../src/log/index.js'
import type { RedisServerHandle } from '../../src/testing/redisServer.js'
import { createHarnessHost } from '../../src/index.js'
import { shop } from '../fixtures/shop.js'
import { cleanupPrefix, getRedisUrl, rigClient, startPrivateRedis, uniquePrefix } from '../rig.js'

let url: string
let redis: RedisClient
let other: RedisClient
const prefixes: string[] = []
const extraClients: RedisClient[] = []

function prefixFor(label: string): string {
  const prefix = uniquePrefix(`log-${label}`)
  prefixes.push(prefix)
  return prefix
}

function client(at: string, options: RedisOptions = {}): RedisClient {
  const c = rigClient(at, { maxRetriesPerRequest: null, ...options })
  c.on('error', () => {}) // restarts and closes are expected here; commands report their own failures
  extraClients.push(c)
  return c
}

/** A numeric field of an app record. */
function num(entry: LogEntry, field: string): number {
  return (entry.record as unknown as Record<string, number>)[field]!
}

function stepRecord(toolCallId: string, name: string, value?: unknown): LogRecord {
  return { type: 'harness.tool.step', toolCallId, name, ...(value === undefined ? {} : { value: value as never }) }
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** calls per command from INFO commandstats, e.g. { hget: 3, xrange: 1 } */
async function commandCalls(admin: RedisClient): Promise<Record<string, number>> {
  const info = await admin.info('commandstats')
  const out: Record<string, number> = {}
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[match[1]!] = Number(match[2])
  return out
}

beforeAll(async () => {
  url = await getRedisUrl()
  redis = client(url)
  other = client(url)
})

afterAll(async () => {
  for (const prefix of prefixes) await cleanupPrefix(url, prefix)
  for (const c of extraClients) c.disconnect()
})

describe('session log: fencing', () => {
  it('a write with a stale epoch is refused with FencedError and writes nothing (saveStep, stageRecords, landResult, parkCall)', async () => {
    const log = new SessionLog(redis, prefixFor('fence'), 's1')
    expect(await log.calls.beginCall('c1', 'charge', 'safe')).toEqual({ kind: 'fresh', epoch: 1, attempt: 1 })
    expect(await log.calls.beginCall('c1', 'charge', 'safe')).toEqual({ kind: 'rerun', epoch: 2, attempt: 2 })
    const current = { toolCallId: 'c1', epoch: 2 }
    await log.calls.saveStep(current, 'first', 1, stepRecord('c1', 'first', 1))
    await log.calls.stageRecords(current, [{ type: 'app.note', n: 1 }])

    // a job hash the park would slim (includes/slimJob.lua): a fenced park leaves it as it is
    const job = { key: `${log.stream.keys.calls}-job`, id: 'call|s1|YzE', data: '{"input":1}' }
    await redis.hset(job.key, 'data', '{"sessionId":"s1","toolCallId":"c1","input":1}', 'opts', '{"jobId":"call|s1|YzE","attempts":5}')
    const snapshot = async () => ({
      xlen: await redis.xlen(log.stream.keys.log),
      steps: await redis.hlen(log.stream.keys.steps),
      staged: await redis.llen(log.calls.stagedKey('c1')),
      calls: await redis.hgetall(log.stream.keys.calls),
      job: await redis.hgetall(job.key),
    })
    const before = await snapshot()
    expect(before).toMatchObject({ steps: 1, staged: 1 })

    const stale = { toolCallId: 'c1', epoch: 1 }
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['saveStep', () => log.calls.saveStep(stale, 'second', 2, stepRecord('c1', 'second', 2))],
      ['stageRecords', () => log.calls.stageRecords(stale, [{ type: 'app.note', n: 2 }])],
      ['landResult', () => log.calls.landResult(stale, 'charge', { result: 'stale' })],
      ['parkCall', () => log.calls.parkCall(stale, 'sleep', Date.now() + 60_000, { job })],
    ]
    for (const [what, attempt] of attempts) {
      const error = await attempt().then(
        () => null,
        (e: unknown) => e,
      )
      expect(error, what).toBeInstanceOf(FencedError)
      expect(error).toMatchObject({ code: 'fenced', toolCallId: 'c1', epoch: 1, currentEpoch: 2 })
    }
    expect(await snapshot()).toEqual(before)
    expect(await log.calls.getStep('c1', 'second')).toEqual({ found: false })
    expect(await log.calls.getCall('c1')).toMatchObject({ status: 'running', epoch: 2 })

    // the current attempt still writes; after it lands, its own epoch is fenced too (the call is done)
    await log.calls.landResult(current, 'charge', { result: 'ok' })
    await expect(log.calls.saveStep(current, 'late', 3, stepRecord('c1', 'late', 3))).rejects.toBeInstanceOf(FencedError)
  })

  it('a fenced write for a call that never began is refused (current epoch none)', async () => {
    const log = new SessionLog(redis, prefixFor('fence-none'), 's1')
    const error = await log.calls.stageRecords({ toolCallId: 'nobody', epoch: 1 }, [{ type: 'app.x' }]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FencedError)
    expect(error).toMatchObject({ currentEpoch: null })
    expect(await redis.llen(log.calls.stagedKey('nobody'))).toBe(0)
  })
})

describe('session log: call states (issue 29: the state and the names in two fields, each under 64 B)', () => {
  it('a call begun now keeps its names apart: every value of a small calls hash is under 64 B and the hash is a listpack', async () => {
    const log = new SessionLog(redis, prefixFor('state'), 'new-state')
    expect(await log.calls.beginCall('c1', 'charge', 'safe', { harness: 'shop', version: 'h-0123456789ab' })).toEqual({
      kind: 'fresh',
      epoch: 1,
      attempt: 1,
      version: 'h-0123456789ab',
    })
    const fields = await redis.hgetall(log.stream.keys.calls)
    expect(JSON.parse(fields['c1']!)).toEqual({ s: 'running', e: 1, a: 1, r: 'safe' })
    expect(JSON.parse(fields['c1\0names']!)).toEqual(['charge', 'shop', 'h-0123456789ab'])
    await log.calls.parkCall({ toolCallId: 'c1', epoch: 1 }, 'event', Date.now() + 60_000, { withoutJob: true })
    for (const value of Object.values(await redis.hgetall(log.stream.keys.calls))) expect(Buffer.byteLength(value)).toBeLessThanOrEqual(64)
    expect(await redis.object('ENCODING', log.stream.keys.calls)).toBe('listpack')
    expect(await log.calls.getCall('c1')).toEqual({
      status: 'parked',
      epoch: 1,
      attempt: 1,
      replay: 'safe',
      name: 'charge',
      version: 'h-0123456789ab',
      owner: { harness: 'shop' },
    })
    expect(await eventTimerOf(log.stream, 'c1')).toBeGreaterThan(Date.now())
  })

  it('a call state written before (n, h and v in the state itself) is read, resumed and run again as it says', async () => {
    const log = new SessionLog(redis, prefixFor('state'), 'old-state')
    const old = { s: 'parked', e: 2, a: 1, r: 'safe', n: 'charge', h: 'shop', i: 'in-1', v: 'h-1' }
    await redis.hset(log.stream.keys.calls, 'c1', JSON.stringify(old))
    expect(await log.calls.getCall('c1')).toEqual({
      status: 'parked',
      epoch: 2,
      attempt: 1,
      replay: 'safe',
      name: 'charge',
      version: 'h-1',
      owner: { harness: 'shop', inputId: 'in-1' },
    })
    expect(await log.calls.beginCall('c1', 'charge', 'safe')).toEqual({ kind: 'resume', epoch: 3, attempt: 1, version: 'h-1' })
    // cut while running: the rerun's started record names the tool and the version of the old state
    expect(await log.calls.beginCall('c1', 'charge', 'safe')).toEqual({ kind: 'rerun', epoch: 4, attempt: 2, version: 'h-1' })
    expect((await log.stream.read({ types: ['harness.tool.started'] })).map((e) => e.record)).toEqual([
      { type: 'harness.tool.started', toolCallId: 'c1', name: 'charge', attempt: 2, replay: 'safe', reason: 'rerun', version: 'h-1' },
    ])
    expect(await log.calls.getCall('c1')).toMatchObject({ status: 'running', name: 'charge', owner: { harness: 'shop', inputId: 'in-1' } })
    expect(await redis.hexists(log.stream.keys.calls, 'c1\0names')).toBe(0)
  })
})

describe('session log: runTool requests', () => {
  it('requestCall lists the session in the sessions index in its own write (no separate ZADD a runTool call), and not for a conflict', async () => {
    const log = new SessionLog(redis, prefixFor('request-index'), 's1')
    expect(await log.calls.requestCall('r1', 'charge', { amount: 1 })).toBe('added')
    expect(await redis.zscore(log.stream.index.sessions, 's1')).not.toBeNull()
    // a caller's retry repairs a removed index entry; a conflicting call under the id lists nothing
    await redis.zrem(log.stream.index.sessions, 's1')
    expect(await log.calls.requestCall('r1', 'charge', { amount: 1 })).toBe('exists')
    expect(await redis.zscore(log.stream.index.sessions, 's1')).not.toBeNull()
    const other = new SessionLog(redis, log.stream.prefix, 's2')
    await redis.hset(other.stream.keys.calls, 'r2\0req', 'another fingerprint')
    expect(await other.calls.requestCall('r2', 'charge', { amount: 1 })).toBe('conflict')
    expect(await redis.zscore(other.stream.index.sessions, 's2')).toBeNull()
  })
})

describe('session log: all-or-nothing writes', () => {
  it('R9: landResult lands the staged records and the result contiguously in one write, even with concurrent appends', async () => {
    const log = new SessionLog(redis, prefixFor('land'), 's1')
    const writer = new SessionLog(other, log.stream.prefix, 's1')
    const begin = await log.calls.beginCall('c1', 'charge', 'safe')
    const fence = { toolCallId: 'c1', epoch: begin.epoch }
    await log.calls.stageRecords(fence, [
      { type: 'app.a', i: 1 },
      { type: 'app.a', i: 2 },
    ])
    await log.calls.stageRecords(fence, [{ type: 'app.a', i: 3 }], 2)

    // other writers append on another connection all the while the result lands: nothing may come
    // between the call's records
    let landed = false
    const noise = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; !landed; i++) await writer.stream.append([{ type: 'app.other', w, i }])
    })
    while ((await redis.xlen(log.stream.keys.log)) < 20) await new Promise((r) => setTimeout(r, 1))
    const resultId = await log.calls.landResult(fence, 'charge', { result: { charged: true } })
    landed = true
    await Promise.all(noise)

    const entries = await log.stream.read()
    const at = entries.findIndex((e) => e.record.type === 'app.a')
    const own = entries.slice(at, at + 4)
    expect(own.map((e) => e.record)).toEqual([
      { type: 'app.a', i: 1 },
      { type: 'app.a', i: 2 },
      { type: 'app.a', i: 3 },
      { type: 'harness.tool.result', toolCallId: 'c1', name: 'charge', result: { charged: true } },
    ])
    expect(own[3]!.id).toBe(resultId)
    // the log held 20 entries (the started record and 19 or more of the noise) before the landing
    expect(at).toBeGreaterThanOrEqual(20)
    expect(await redis.llen(log.calls.stagedKey('c1'))).toBe(0)
    expect(await log.calls.getCall('c1')).toMatchObject({ status: 'done', result: { result: { charged: true } } })
    expect(await redis.zscore(log.stream.index.openCalls, openMember(log.sessionId, 'c1'))).toBeNull()
  })

  it('append of several records where one is invalid throws InvalidRecordError and writes none', async () => {
    const log = new SessionLog(redis, prefixFor('append'), 's1')
    const ids = await log.stream.append([
      { type: 'app.one', n: 1 },
      { type: 'app.two', n: 2 },
    ])
    expect(ids).toHaveLength(2)
    expect((await log.stream.read()).map((e) => e.id)).toEqual(ids)

    const bad: Array<[string, LogRecord]> = [
      ['harness.tool.result missing its fields', { type: 'harness.tool.result' } as never],
      [
        'harness.tool.started with attempt 0',
        { type: 'harness.tool.started', toolCallId: 'c', name: 'n', attempt: 0, replay: 'safe', reason: 'fresh' },
      ],
      ['unknown harness.* type', { type: 'harness.future.x' }],
      ['app record that is not JSON', { type: 'app.bad', at: new Date() }],
      ['record with no type', { n: 1 } as never],
    ]
    for (const [what, record] of bad) {
      const error = await log.stream.append([{ type: 'app.ok', n: 3 }, record, { type: 'app.ok', n: 4 }]).catch((e: unknown) => e)
      expect(error, what).toBeInstanceOf(InvalidRecordError)
      expect(await redis.xlen(log.stream.keys.log), what).toBe(2)
    }
  })
})

describe('session log: read and follow', () => {
  it('read honours after, types and limit', async () => {
    const log = new SessionLog(redis, prefixFor('read'), 's1')
    const records: LogRecord[] = [
      { type: 'app.a', i: 0 },
      { type: 'app.b', i: 1 },
      { type: 'app.a', i: 2 },
      { type: 'app.b', i: 3 },
      { type: 'app.a', i: 4 },
      { type: 'app.b', i: 5 },
    ]
    const ids = await log.stream.append(records)
    const idx = (entries: LogEntry[]) => entries.map((e) => num(e, 'i'))

    expect(idx(await log.stream.read())).toEqual([0, 1, 2, 3, 4, 5])
    expect(idx(await log.stream.read({ after: ids[1] }))).toEqual([2, 3, 4, 5])
    expect(idx(await log.stream.read({ after: ids[5] }))).toEqual([])
    expect(idx(await log.stream.read({ types: ['app.b'] }))).toEqual([1, 3, 5])
    expect(idx(await log.stream.read({ limit: 2 }))).toEqual([0, 1])
    expect(idx(await log.stream.read({ types: ['app.b'], limit: 2 }))).toEqual([1, 3])
    expect(idx(await log.stream.read({ after: ids[1], types: ['app.a'], limit: 1 }))).toEqual([2])
    expect((await log.stream.read({ after: ids[2], limit: 1 }))[0]!.id).toBe(ids[3])
    expect(await log.stream.readEntry(ids[4]!)).toEqual({ id: ids[4], record: records[4] })
    expect(await log.stream.readEntry('1-1')).toBeNull()
  })

  it('read pages past 1000 entries and a limit counts only the entries it returns', async () => {
    const log = new SessionLog(redis, prefixFor('read-pages'), 's1')
    const batch = Array.from({ length: 1205 }, (_, i): LogRecord => ({ type: i % 2 ? 'app.odd' : 'app.even', i }))
    await log.stream.append(batch)
    expect(await log.stream.read()).toHaveLength(1205)
    const odd = await log.stream.read({ types: ['app.odd'] })
    expect(odd).toHaveLength(602)
    expect(num(odd.at(-1)!, 'i')).toBe(1203)
    // an unknown harness.* entry is skipped and does not use up the limit
    await redis.xadd(log.stream.keys.log, '*', 'r', JSON.stringify({ type: 'harness.future.x' }))
    await log.stream.append([{ type: 'app.last', i: 1205 }])
    const tail = await log.stream.read({ after: (await log.stream.read({ limit: 1205 })).at(-1)!.id, limit: 1 })
    expect(tail.map((e) => e.record.type)).toEqual(['app.last'])
  })

  it('follow on a second connection sees records appended by the first, in order, after a given id, and ends on abort', async () => {
    const prefix = prefixFor('follow')
    const writer = new SessionLog(redis, prefix, 's1')
    const followerClient = client(url)
    const follower = new SessionLog(followerClient, prefix, 's1')
    const [first] = await writer.stream.append([
      { type: 'app.n', n: 0 },
      { type: 'app.n', n: 1 },
    ])

    const controller = new AbortController()
    const seen: LogEntry[] = []
    const typed: LogEntry[] = []
    // a block longer than the test timeout: the abort must interrupt a pending XREAD BLOCK
    const following = (async () => {
      for await (const entry of followLog(follower.stream, { after: first, signal: controller.signal, blockMs: 600_000 })) seen.push(entry)
      return 'ended'
    })()
    const typedFollow = (async () => {
      for await (const entry of followLog(follower.stream, { types: ['app.m'], signal: controller.signal, blockMs: 600_000 }))
        typed.push(entry)
    })()
    await waitFor(() => seen.length === 1, 'the entry after `first`')

    const ids: string[] = []
    for (let n = 2; n < 6; n++) ids.push(...(await writer.stream.append([{ type: n % 2 ? 'app.m' : 'app.n', n }])))
    await waitFor(() => seen.length === 5 && typed.length === 2, 'the new entries')

    expect(seen.map((e) => num(e, 'n'))).toEqual([1, 2, 3, 4, 5])
    expect(seen.slice(1).map((e) => e.id)).toEqual(ids)
    expect(typed.map((e) => num(e, 'n'))).toEqual([3, 5])

    controller.abort()
    await expect(following).resolves.toBe('ended')
    await expect(typedFollow).resolves.toBeUndefined()
    // the follower's own client is untouched by the abort
    expect(await follower.stream.read({ after: ids[3] })).toEqual([])
  })

  it('follow with an already aborted signal returns at once', async () => {
    const log = new SessionLog(redis, prefixFor('follow-aborted'), 's1')
    await log.stream.append([{ type: 'app.x' }])
    const seen: LogEntry[] = []
    for await (const entry of followLog(log.stream, { signal: AbortSignal.abort() })) seen.push(entry)
    expect(seen).toEqual([])
  })
})

describe('session log: steps', () => {
  let server: RedisServerHandle
  beforeAll(async () => {
    // a server of our own so INFO commandstats counts only this test's commands
    server = await startPrivateRedis({ appendonly: false })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('R1: getStep finds a saved step with one HGET and reads no stream', async () => {
    const stepsClient = client(server.url)
    const admin = client(server.url)
    const log = new SessionLog(stepsClient, prefixFor('getstep'), 's1')
    const begin = await log.calls.beginCall('c1', 'charge', 'safe')
    const fence = { toolCallId: 'c1', epoch: begin.epoch }
    await log.stream.append(Array.from({ length: 200 }, (_, i) => ({ type: 'app.filler', i })))
    expect(await log.calls.saveStep(fence, 'charge', { id: 'ch_1' }, stepRecord('c1', 'charge', { id: 'ch_1' }))).toEqual({
      found: true,
      value: { id: 'ch_1' },
    })

    const before = await commandCalls(admin)
    const found = await log.calls.getStep('c1', 'charge')
    const after = await commandCalls(admin)

    expect(found).toEqual({ found: true, value: { id: 'ch_1' } })
    for (const cmd of ['xrange', 'xrevrange', 'xread', 'xreadgroup', 'xlen', 'eval', 'evalsha', 'hgetall']) {
      expect(after[cmd] ?? 0, cmd).toBe(before[cmd] ?? 0)
    }
    expect((after.hget ?? 0) - (before.hget ?? 0)).toBe(1)
    expect(await log.calls.getStep('c1', 'other')).toEqual({ found: false })
    expect(await log.calls.getStep('c2', 'charge')).toEqual({ found: false })
  })

  it('R3: an undefined step value is stored as done with no value and reads back as { found: true, value: undefined }', async () => {
    const log = new SessionLog(redis, prefixFor('void'), 's1')
    const begin = await log.calls.beginCall('c1', 'sendInvoice', 'safe')
    const fence = { toolCallId: 'c1', epoch: begin.epoch }
    const saved = await log.calls.saveStep(fence, 'send', undefined, stepRecord('c1', 'send'))
    expect(saved).toStrictEqual({ found: true, value: undefined })
    expect(await log.calls.getStep('c1', 'send')).toStrictEqual({ found: true, value: undefined })
    expect(await log.calls.getStep('c1', 'never-run')).toStrictEqual({ found: false })
    // the first stored value wins: a second save returns the stored "no value", not the new one
    expect(await log.calls.saveStep(fence, 'send', 5, stepRecord('c1', 'send', 5))).toStrictEqual({ found: true, value: undefined })
    const steps = (await log.stream.read({ types: ['harness.tool.step'] })).map((e) => e.record)
    expect(steps).toEqual([{ type: 'harness.tool.step', toolCallId: 'c1', name: 'send' }])
  })

  it('a step value of null, 0, false or "" is a stored value, distinct from no value', async () => {
    const log = new SessionLog(redis, prefixFor('falsy'), 's1')
    const begin = await log.calls.beginCall('c1', 't', 'safe')
    const fence = { toolCallId: 'c1', epoch: begin.epoch }
    for (const [name, value] of [
      ['null', null],
      ['zero', 0],
      ['false', false],
      ['empty', ''],
    ] as const) {
      await log.calls.saveStep(fence, name, value, stepRecord('c1', name, value))
      expect(await log.calls.getStep('c1', name), name).toStrictEqual({ found: true, value })
    }
  })
})

describe('session log: ids', () => {
  it('a bad session id is refused with InvalidIdError before any Redis call', () => {
    const lazy = new Redis('redis://127.0.0.1:1', { lazyConnect: true })
    const bad: unknown[] = ['a:b', '', 'x'.repeat(201), 'a b', ' lead', 'tab\there', 'ü', '{tag}', 42, null, undefined, {}]
    for (const id of bad) {
      expect(() => new SessionLog(lazy, 'p', id as string), JSON.stringify(id) ?? String(id)).toThrow(InvalidIdError)
    }
    try {
      new SessionLog(lazy, 'p', 'a:b')
    } catch (error) {
      expect(error).toMatchObject({ code: 'invalid_id' })
      expect((error as Error).message).toContain('"a:b"')
    }
    // the client was never asked to connect
    expect(lazy.status).toBe('wait')
    lazy.disconnect()
  })

  it('session ids with ".", "_", "-" and 200 characters are accepted and used', async () => {
    const prefix = prefixFor('ids')
    for (const id of ['a.b_c-D9', '-', '.', 'x'.repeat(200)]) {
      const log = new SessionLog(redis, prefix, id)
      expect(log.stream.keys.log).toBe(`${shardBase(prefix, log.stream.shard, defaultShards())}:${id}:log`)
      const [entryId] = await log.stream.append([{ type: 'app.hello', id }])
      expect(await log.stream.read()).toEqual([{ id: entryId, record: { type: 'app.hello', id } }])
    }
  })
})

describe('session log: malformed and unknown entries', () => {
  it('a malformed entry is reported with its stream id and the session is marked; other sessions read fine', async () => {
    const prefix = prefixFor('malformed')
    const good = new SessionLog(redis, prefix, 'good')
    await good.stream.append([{ type: 'app.fine', n: 1 }])

    const cases: Array<[string, string[]]> = [
      ['bad-json', ['r', '{"type": "app.x", oops']],
      ['bad-schema', ['r', JSON.stringify({ type: 'harness.tool.result', name: 'charge' })]],
      ['bad-field', ['x', JSON.stringify({ type: 'app.x' })]],
      ['no-type', ['r', JSON.stringify({ n: 1 })]],
    ]
    for (const [sessionId, fields] of cases) {
      const log = new SessionLog(redis, prefix, sessionId)
      await log.stream.append([{ type: 'app.before' }])
      const badId = (await redis.xadd(log.stream.keys.log, '*', ...fields))!
      await log.stream.append([{ type: 'app.after' }])

      const error = await log.stream.read().catch((e: unknown) => e)
      expect(error, sessionId).toBeInstanceOf(MalformedEntryError)
      expect(error).toMatchObject({ code: 'malformed_entry', entryId: badId, sessionId })
      expect((error as Error).message).toContain(badId)
      await expect(log.stream.readEntry(badId)).rejects.toBeInstanceOf(MalformedEntryError)
      // entries before the bad one still read; the mark is written on the same connection, so it is there now
      expect((await log.stream.read({ limit: 1 })).map((e) => e.record.type)).toEqual(['app.before'])
      expect(await log.stream.redis.hget(log.stream.index.corrupt, sessionId)).toBe(badId)
    }
    expect((await good.stream.read()).map((e) => e.record)).toEqual([{ type: 'app.fine', n: 1 }])
    expect(await redis.hexists(good.stream.index.corrupt, 'good')).toBe(0)
  })

  it('a malformed entry ends follow with MalformedEntryError', async () => {
    const log = new SessionLog(redis, prefixFor('malformed-follow'), 's1')
    const badId = (await redis.xadd(log.stream.keys.log, '*', 'r', 'not json'))!
    const error = await (async () => {
      for await (const _ of followLog(log.stream, { blockMs: 1000 })) void _
    })().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(MalformedEntryError)
    expect(error).toMatchObject({ entryId: badId })
  })

  it('an unknown harness.* type (from a newer version) is skipped without error; app records round-trip', async () => {
    const log = new SessionLog(redis, prefixFor('unknown'), 's1')
    const app: LogRecord = { type: 'app.memory', text: 'héllo ✓ "quoted"\n', n: -1.5e-7, nested: { list: [1, null, true, { a: [] }] } }
    const [appId] = await log.stream.append([app])
    await redis.xadd(log.stream.keys.log, '*', 'r', JSON.stringify({ type: 'harness.future.x', anything: { goes: 1 } }))
    const [lastId] = await log.stream.append([{ type: 'x' }])
    expect(await log.stream.read()).toEqual([
      { id: appId, record: app },
      { id: lastId, record: { type: 'x' } },
    ])
  })
})

describe('session log: Redis restart', () => {
  it('appends before a SIGKILL and after a restart are both kept; the same client reconnects', async () => {
    const server = await startPrivateRedis()
    try {
      const c = client(server.url)
      const log = new SessionLog(c, prefixFor('restart'), 's1')
      const [first] = await log.stream.append([{ type: 'app.before' }])
      const begin = await log.calls.beginCall('c1', 'charge', 'safe')

      await server.kill()
      const whileDown = log.stream.append([{ type: 'app.while-down' }]) // queued by ioredis until it reconnects
      await server.restart()
      const [during] = await whileDown
      const [after] = await log.stream.append([{ type: 'app.after' }])
      // the call state and its epoch came back from the AOF: the attempt can still write (scripts reload on NOSCRIPT)
      await log.calls.saveStep({ toolCallId: 'c1', epoch: begin.epoch }, 'charge', 1, stepRecord('c1', 'charge', 1))

      const entries = await log.stream.read()
      expect(entries.filter((e) => e.record.type.startsWith('app.')).map((e) => e.id)).toEqual([first, during, after])
      expect(entries.map((e) => e.record.type)).toEqual([
        'app.before',
        'harness.tool.started',
        'app.while-down',
        'app.after',
        'harness.tool.step',
      ])
    } finally {
      await server.stop()
    }
  })
})

describe('session log: call lifecycle (beginCall)', () => {
  const started = async (log: SessionLog) =>
    (await log.stream.read({ types: ['harness.tool.started'] })).map((e) => e.record as { attempt: number; reason: string })

  it('fresh, then done after landResult: the kept result is not run again', async () => {
    const log = new SessionLog(redis, prefixFor('begin-done'), 's1')
    const begin = await log.calls.beginCall('c1', 'charge', 'safe')
    expect(begin).toEqual({ kind: 'fresh', epoch: 1, attempt: 1 })
    expect(await redis.zscore(log.stream.index.openCalls, openMember(log.sessionId, 'c1'))).not.toBeNull()
    await log.calls.landResult({ toolCallId: 'c1', epoch: 1 }, 'charge', { result: 42 })
    expect(await log.calls.beginCall('c1', 'charge', 'safe')).toEqual({ kind: 'done', epoch: 1, attempt: 1 })
    expect(await log.calls.beginCall('c1', 'charge', 'never')).toMatchObject({ kind: 'done' })
    expect(await started(log)).toEqual([
      { type: 'harness.tool.started', toolCallId: 'c1', name: 'charge', attempt: 1, replay: 'safe', reason: 'fresh' },
    ])
    expect((await log.stream.read({ types: ['harness.tool.result'] })).map((e) => e.record)).toHaveLength(1)
  })

  it("R10: a cut 'safe' call runs again with a new epoch; the cut attempt's staged records are discarded", async () => {
    const log = new SessionLog(redis, prefixFor('begin-rerun'), 's1')
    await log.calls.beginCall('c1', 'checkout', 'safe')
    await log.calls.stageRecords({ toolCallId: 'c1', epoch: 1 }, [{ type: 'app.cut-attempt' }])
    const rerun = await log.calls.beginCall('c1', 'checkout', 'safe') // the first attempt is still 'running': it was cut
    expect(rerun).toEqual({ kind: 'rerun', epoch: 2, attempt: 2 })
    expect(await redis.llen(log.calls.stagedKey('c1'))).toBe(0)
    await log.calls.stageRecords({ toolCallId: 'c1', epoch: 2 }, [{ type: 'app.second-attempt' }])
    await log.calls.landResult({ toolCallId: 'c1', epoch: 2 }, 'checkout', { result: 'ok' })
    const types = (await log.stream.read()).map((e) => e.record.type)
    expect(types).toEqual(['harness.tool.started', 'harness.tool.started', 'app.second-attempt', 'harness.tool.result'])
    expect((await started(log)).map((r) => [r.reason, r.attempt])).toEqual([
      ['fresh', 1],
      ['rerun', 2],
    ])
  })

  it("R10: a cut 'never' call is classified cut; its staged records are kept and land with its error", async () => {
    const log = new SessionLog(redis, prefixFor('begin-cut'), 's1')
    await log.calls.beginCall('c1', 'notify', 'never')
    await log.calls.saveStep({ toolCallId: 'c1', epoch: 1 }, 'send', { sent: true }, stepRecord('c1', 'send', { sent: true }))
    await log.calls.stageRecords({ toolCallId: 'c1', epoch: 1 }, [{ type: 'app.sent', to: 'a@b' }])
    const cut = await log.calls.beginCall('c1', 'notify', 'never')
    expect(cut).toEqual({ kind: 'cut', epoch: 2, attempt: 2 })
    expect(await redis.llen(log.calls.stagedKey('c1'))).toBe(1)
    await log.calls.landResult({ toolCallId: 'c1', epoch: 2 }, 'notify', { error: { message: 'interrupted', code: 'interrupted' } })
    expect((await log.stream.read()).map((e) => e.record)).toEqual([
      { type: 'harness.tool.started', toolCallId: 'c1', name: 'notify', attempt: 1, replay: 'never', reason: 'fresh' },
      { type: 'harness.tool.step', toolCallId: 'c1', name: 'send', value: { sent: true } },
      { type: 'harness.tool.started', toolCallId: 'c1', name: 'notify', attempt: 2, replay: 'never', reason: 'cut' },
      { type: 'app.sent', to: 'a@b' },
      { type: 'harness.tool.result', toolCallId: 'c1', name: 'notify', error: { message: 'interrupted', code: 'interrupted' } },
    ])
    expect(await log.calls.getStep('c1', 'send')).toEqual({ found: true, value: { sent: true } })
  })

  it("R14: a parked call resumes (not cut), even for replay 'never'; the same attempt, a new epoch", async () => {
    const log = new SessionLog(redis, prefixFor('begin-resume'), 's1')
    await log.calls.beginCall('c1', 'nap', 'never')
    await log.calls.stageRecords({ toolCallId: 'c1', epoch: 1 }, [{ type: 'app.before-park' }])
    const until = Date.now() + 1000
    await log.calls.parkCall({ toolCallId: 'c1', epoch: 1 }, 'sleep', until)
    expect(await log.calls.getCall('c1')).toMatchObject({ status: 'parked', epoch: 1, attempt: 1 })
    const resume = await log.calls.beginCall('c1', 'nap', 'never')
    expect(resume).toEqual({ kind: 'resume', epoch: 2, attempt: 1 })
    // the resumed run starts from the top: what it staged before the park is kept, by position, so
    // staging the same first record again adds nothing and a new one is appended after it
    expect(await redis.llen(log.calls.stagedKey('c1'))).toBe(1)
    await log.calls.stageRecords({ toolCallId: 'c1', epoch: 2 }, [{ type: 'app.before-park' }, { type: 'app.after-wake' }], 0)
    expect(await redis.lrange(log.calls.stagedKey('c1'), 0, -1)).toEqual(['{"type":"app.before-park"}', '{"type":"app.after-wake"}'])
    expect(await started(log)).toHaveLength(1)
    expect((await log.stream.read({ types: ['harness.tool.suspended'] })).map((e) => e.record)).toEqual([
      { type: 'harness.tool.suspended', toolCallId: 'c1', kind: 'sleep', until },
    ])
    // the parked attempt's epoch is stale now
    await expect(log.calls.parkCall({ toolCallId: 'c1', epoch: 1 }, 'sleep', until)).rejects.toBeInstanceOf(FencedError)
  })

  it('a park slims the hash of its delayed job: the data it is given, the options without the job id wherever it stands, a BullMQ priority of 0 and processedOn dropped, every other field kept', async () => {
    const log = new SessionLog(redis, prefixFor('slim-job'), 's1')
    const id = 'call|s1|YzE'
    const data = `{"sessionId":"s1","toolCallId":"${'c'.repeat(100)}","input":1}`
    const cases: Array<[string, string]> = [
      [`{"jobId":"${id}","attempts":5}`, '{"attempts":5}'],
      [`{"attempts":5,"jobId":"${id}","priority":3}`, '{"attempts":5,"priority":3}'],
      [`{"attempts":5,"jobId":"${id}"}`, '{"attempts":5}'],
      [`{"jobId":"${id}"}`, '{}'],
    ]
    for (const [i, [opts, slimmed]] of cases.entries()) {
      await log.calls.beginCall(`c${i}`, 'nap', 'safe')
      const job = { key: `${log.stream.keys.calls}-job${i}`, id, data: '{"input":1}' }
      // BullMQ's priority 0 and processedOn go (a missing priority is 0 to BullMQ); any other priority stays
      const priority = i === 1 ? '3' : '0'
      await redis.hset(
        job.key,
        'name',
        'nap',
        'data',
        data,
        'opts',
        opts,
        'ats',
        '1',
        'stc',
        '2',
        'priority',
        priority,
        'processedOn',
        '17',
      )
      expect(await redis.object('ENCODING', job.key)).toBe('hashtable')
      await log.calls.parkCall({ toolCallId: `c${i}`, epoch: 1 }, 'sleep', Date.now() + 60_000, { job })
      expect(await redis.hgetall(job.key)).toEqual({
        name: 'nap',
        data: '{"input":1}',
        opts: slimmed,
        ats: '1',
        stc: '2',
        ...(priority === '0' ? {} : { priority }),
      })
      // written anew: every value fits, so Redis keeps it as a listpack again
      expect(await redis.object('ENCODING', job.key)).toBe('listpack')
    }
    // another value over 64 B (a failed attempt's stack trace): the two fields are set in place
    await log.calls.beginCall('c9', 'nap', 'safe')
    const job = { key: `${log.stream.keys.calls}-job9`, id, data: '{"input":1}' }
    const stacktrace = JSON.stringify(['x'.repeat(100)])
    await redis.hset(job.key, 'data', data, 'opts', `{"jobId":"${id}"}`, 'stacktrace', stacktrace, 'priority', '0', 'processedOn', '17')
    await log.calls.parkCall({ toolCallId: 'c9', epoch: 1 }, 'sleep', Date.now() + 60_000, { job })
    expect(await redis.hgetall(job.key)).toEqual({ data: '{"input":1}', opts: '{}', stacktrace })
    expect(await redis.object('ENCODING', job.key)).toBe('hashtable')
  })

  it('a park gives back the unused bytes of a one-node log: the same entries and ids, and a blocked follower reads on', async () => {
    const log = new SessionLog(redis, prefixFor('compact'), 's1')
    const followerLog = new SessionLog(client(url), log.stream.prefix, 's1')
    await log.calls.beginCall('c1', 'nap', 'safe')
    await log.calls.saveStep({ toolCallId: 'c1', epoch: 1 }, 'before', 1, stepRecord('c1', 'before', 1))
    const bytes = async () => Number(await redis.memory('USAGE', log.stream.keys.log, 'SAMPLES', '0'))
    // Redis preallocates the stream's first node (4 KiB on a default server): what the park gives back
    const preallocated = await bytes()
    const before = await log.stream.read()
    const seen: LogEntry[] = []
    const controller = new AbortController()
    const following = (async () => {
      for await (const entry of followLog(followerLog.stream, { after: before.at(-1)!.id, signal: controller.signal, blockMs: 600_000 }))
        seen.push(entry)
    })()
    await new Promise((r) => setTimeout(r, 100)) // the follower is in XREAD BLOCK when the log is rewritten
    await log.calls.parkCall({ toolCallId: 'c1', epoch: 1 }, 'sleep', Date.now() + 60_000)
    const compacted = await bytes()
    expect(compacted).toBeLessThan(preallocated - 2048)
    const after = await log.stream.read()
    expect(after.slice(0, before.length)).toEqual(before)
    expect(after.map((e) => e.record.type)).toEqual(['harness.tool.started', 'harness.tool.step', 'harness.tool.suspended'])
    // the rewritten stream keeps its last id: a new entry gets a later one, and the blocked follower gets both
    expect(await log.calls.beginCall('c1', 'nap', 'safe')).toMatchObject({ kind: 'resume', epoch: 2 })
    const [appended] = await log.stream.append([{ type: 'app.after-wake' }])
    await waitFor(() => seen.length === 2, 'the suspended record and the record after the wake-up')
    expect(seen.map((e) => e.id)).toEqual([after[2]!.id, appended])
    controller.abort()
    await following
  })
})

describe('session log: inputs', () => {
  it('R15: addInput is idempotent per inputId; another text is a conflict; settleInput logs once', async () => {
    const log = new SessionLog(redis, prefixFor('inputs'), 's1')
    const idx = log.stream.index
    const added = await log.inputs.addInput('in-1', 'Charge order 42')
    if (added.status !== 'added') throw new Error(`not added: ${added.status}`)
    expect(added.disposition).toBe('run')
    expect(added.entryId).toMatch(/^\d+-\d+$/)
    expect(await log.inputs.addInput('in-1', 'Charge order 42')).toEqual({
      status: 'exists',
      entryId: added.entryId,
      settled: false,
      first: true,
    })
    expect(await log.inputs.addInput('in-1', 'Charge order 43')).toEqual({ status: 'conflict' })
    expect(await redis.xlen(log.stream.keys.log)).toBe(1)
    expect(await log.inputs.getInput('in-1')).toMatchObject({ text: 'Charge order 42', entryId: added.entryId, status: 'open' })
    expect(await redis.zscore(idx.openTurns, openMember(log.sessionId, 'in-1'))).not.toBeNull()
    expect(await redis.zscore(idx.sessions, 's1')).not.toBeNull()

    await log.inputs.settle({ type: 'harness.input.settled', inputId: 'in-1', outcome: 'completed', text: 'done' }, '')
    await log.inputs.settle({ type: 'harness.input.settled', inputId: 'in-1', outcome: 'failed' }, '')
    const settled = await log.stream.read({ types: ['harness.input.settled'] })
    expect(settled.map((e) => e.record)).toEqual([{ type: 'harness.input.settled', inputId: 'in-1', outcome: 'completed', text: 'done' }])
    expect(await log.inputs.getInput('in-1')).toMatchObject({ status: 'settled', settledId: settled[0]!.id })
    expect(await redis.zscore(idx.openTurns, openMember(log.sessionId, 'in-1'))).toBeNull()
    // a settled input is still the same input: no new turn
    expect(await log.inputs.addInput('in-1', 'Charge order 42')).toEqual({
      status: 'exists',
      entryId: added.entryId,
      settled: true,
      first: false,
    })
  })
})

describe('session log: scripts on a fresh connection (ioredis #1931)', () => {
  // one Redis: on a Cluster the flush and the counts would be of one node
  it.skipIf((process.env.REDIS_URL ?? '').includes(','))(
    "a script's first use on a connection sends its source (EVAL): no EVALSHA answered NOSCRIPT, so a command sent behind it runs after it",
    async () => {
      const evalshaCalls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0)
      await redis.call('SCRIPT', 'FLUSH')
      const fresh = client(url, { lazyConnect: true })
      const log = new SessionLog(fresh, prefixFor('eval-first'), 's1')
      const before = await evalshaCalls()
      expect(await log.calls.requestCall('r1', 'charge', { amount: 1 })).toBe('added')
      expect(await evalshaCalls()).toBe(before)
      // later uses send EVALSHA
      expect(await log.calls.requestCall('r1', 'charge', { amount: 1 })).toBe('exists')
      expect(await evalshaCalls()).toBe(before + 1)
    },
  )

  it('a plain read sent in the same tick as the first script call of an auto-pipelined connection: both answer, nothing is thrown uncaught', async () => {
    const fresh = client(url, { enableAutoPipelining: true, lazyConnect: true })
    const log = new SessionLog(fresh, prefixFor('pipeline-first'), 's1')
    // the read opens the tick's pipeline, the script joins it
    const [input, begin] = await Promise.all([log.inputs.getInput('in-1'), log.calls.beginCall('c1', 'charge', 'safe')])
    expect(input).toBeNull()
    expect(begin).toEqual({ kind: 'fresh', epoch: 1, attempt: 1 })
  })

  it("a fresh host's session read and its first prompt in the same tick: both answer, the process lives on", async () => {
    const prefix = prefixFor('pipeline-host')
    const host = createHarnessHost({ redis: url, harnesses: [shop], prefix, logger: pino({ level: 'silent' }) })
    try {
      await host.ready()
      const session = host.open(shop, { sessionId: 's1' })
      const [input, prompted] = await Promise.all([session.log.input('in-1'), session.prompt('hello', { inputId: 'in-1' })])
      expect(input).toBeNull()
      expect(prompted).toEqual({ inputId: 'in-1' })
      expect(await session.log.input('in-1')).toMatchObject({ status: 'open' })
    } finally {
      await host.close()
    }
  })
})

describe('session log: turn records', () => {
  it('turnRecord logs each model-call try number once per response; a stale run, a settled turn and a resume of an unpaused turn write nothing', async () => {
    const log = new SessionLog(redis, prefixFor('turn-records'), 's1')
    await log.inputs.addInput('in-1', 'hi')
    const error = { message: '503 overloaded', code: '503' }
    const retry = (attempt: number) => ({ type: 'harness.turn.retry', inputId: 'in-1', attempt, error, nextAt: 0 }) as const
    expect((await log.inputs.logTurnRecord(retry(1), 0)).status).toBe('ok')
    // a second run of the turn that folded the same log (its lock was lost) cannot log try 1 again
    expect((await log.inputs.logTurnRecord(retry(1), 0)).status).toBe('stale')
    expect((await log.inputs.logTurnRecord(retry(3), 0)).status).toBe('stale')
    expect((await log.inputs.logTurnRecord(retry(2), 0)).status).toBe('ok')
    expect((await log.inputs.logTurnRecord(retry(3), 1)).status).toBe('stale') // not the response count
    expect((await log.inputs.logTurnRecord({ type: 'harness.turn.resumed', inputId: 'in-1', at: 0 })).status).toBe('not_paused')
    expect((await log.inputs.logTurnRecord({ type: 'harness.turn.paused', inputId: 'in-1', error, at: 0 }, 0)).status).toBe('ok')
    expect((await log.inputs.getInput('in-1'))?.paused).toBe(true)
    expect((await log.inputs.logTurnRecord({ type: 'harness.turn.resumed', inputId: 'in-1', at: 0 })).status).toBe('ok')
    expect((await log.inputs.getInput('in-1'))?.paused).toBeUndefined()
    // a resume starts the count afresh
    expect((await log.inputs.logTurnRecord(retry(1), 0)).status).toBe('ok')
    await log.inputs.settle({ type: 'harness.input.settled', inputId: 'in-1', outcome: 'completed' }, '')
    expect((await log.inputs.logTurnRecord(retry(2), 0)).status).toBe('settled')
    const types = (await log.stream.read()).map((e) => e.record.type)
    expect(types.filter((t) => t.startsWith('harness.turn.'))).toEqual([
      'harness.turn.retry',
      'harness.turn.retry',
      'harness.turn.paused',
      'harness.turn.resumed',
      'harness.turn.retry',
    ])
    // the turn's records are in its conversation (the fold reads them from there)
    expect((await log.inputs.conversation()).filter((e) => e.record.type.startsWith('harness.turn.'))).toHaveLength(5)
  })
})
