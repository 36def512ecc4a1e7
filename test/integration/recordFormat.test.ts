// The deployment's record format (src/log/storedRecords.ts, docs/decisions/parked-call-memory.md): a new
// deployment stores a parked call's five records as arrays, one that ran before keeps objects until an
// operator sets format 2, and a session begun under one format goes on under the other.
import { toolDefinition } from '@tanstack/ai'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, WaitTimeoutError, type HarnessHost } from '../../src/index.js'
import { SessionLog, type RedisClient } from '../../src/log/index.js'
import { recordFormatKey, sessionKeys, shardCountKey } from '../../src/log/keys.js'
import { scriptedModel } from '../../src/testing/index.js'
import { until } from '../helpers/log.js'
import { cleanupPrefix, getRedisUrl, rigClient, uniquePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const nap = durableTool(
  toolDefinition({ name: 'nap', description: 'A step, a sleep, a step', inputSchema: z.object({ ms: z.number() }) }),
  async ({ ms }, { step }) => {
    const before = await step.do('before', async () => 'b')
    await step.sleep('nap', ms)
    const after = await step.do('after', async () => 'a')
    return { before, after }
  },
)
const naps = defineHarness({ name: 'record-format', adapter: scriptedModel([]), tools: [nap] })
const silent = pino({ level: 'silent' })

let url: string
let redis: RedisClient
const prefixes: string[] = []
const hosts: HarnessHost[] = []
const workers: Array<{ close(): Promise<unknown> }> = []

beforeAll(async () => {
  url = await getRedisUrl()
  redis = rigClient(url)
})
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close()))
  await Promise.all(hosts.splice(0).map((h) => h.close()))
  for (const p of prefixes.splice(0)) await cleanupPrefix(url, p)
})
afterAll(() => redis?.disconnect())

function hostOn(prefix: string, withWorkers = true) {
  const host = createHarnessHost({ redis: url, harnesses: [naps], prefix, logger: silent })
  hosts.push(host)
  if (withWorkers) workers.push(host.startWorkers({ concurrency: 2 }))
  return host
}
const newPrefix = (label: string) => {
  const prefix = uniquePrefix(label)
  prefixes.push(prefix)
  return prefix
}
/** The stored values of a session's log, in order. */
const storedOf = async (host: HarnessHost, sessionId: string) => {
  const entries = await redis.xrange(sessionKeys(host.prefix, sessionId, 1).log, '-', '+')
  return entries.map(([, fields]) => fields[1]!)
}
const typesOf = async (host: HarnessHost, sessionId: string) => (await host.open(naps, { sessionId }).log.read()).map((e) => e.record.type)
const park = async (host: HarnessHost, sessionId: string, ms: number) => {
  await host
    .open(naps, { sessionId })
    .runTool({ name: 'nap', input: { ms }, toolCallId: 'toolu_01AbCdEfGhIjKlMnOpQrStUv' }, { timeoutMs: 0 })
    .catch((e: unknown) => {
      if (!(e instanceof WaitTimeoutError)) throw e
    })
  await until(async () => (await typesOf(host, sessionId)).includes('harness.tool.suspended'), 'the call parked')
}
const PARKED = ['harness.tool.requested', 'harness.tool.started', 'harness.tool.step', 'harness.tool.sleep', 'harness.tool.suspended']

describe('the record format of a deployment', () => {
  it('R7: a new deployment claims format 2: a parked call stores its five records as arrays, and reads and exports them as records', async () => {
    const prefix = newPrefix('format-new')
    const host = hostOn(prefix)
    await host.ready()
    expect(await redis.get(recordFormatKey(prefix))).toBe('2')
    await park(host, 'new-1', 3_600_000)
    expect((await storedOf(host, 'new-1')).map((v) => v[0])).toEqual(['[', '[', '[', '[', '['])
    const log = new SessionLog(redis, prefix, 'new-1', { shards: 1 })
    const records = (await log.stream.read()).map((e) => e.record)
    expect(records.map((r) => r.type)).toEqual(PARKED)
    expect(records[0]).toEqual({
      type: 'harness.tool.requested',
      toolCallId: 'toolu_01AbCdEfGhIjKlMnOpQrStUv',
      name: 'nap',
      input: { ms: 3_600_000 },
    })
    expect(records[2]).toEqual({ type: 'harness.tool.step', toolCallId: 'toolu_01AbCdEfGhIjKlMnOpQrStUv', name: 'before', value: 'b' })
    // the export (retention's archive) holds every record as its object
    const { jsonl } = await log.stream.exportJsonl()
    const exported = jsonl
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { record: unknown }).record)
    expect(exported).toEqual(records)
  })

  it('R7 R14: a deployment that ran before stays at format 1 until set; a call parked under 1 wakes under 2 and lands', async () => {
    const prefix = newPrefix('format-old')
    // what an earlier version leaves: a shard count, no record format
    await redis.set(shardCountKey(prefix), '1')
    const old = hostOn(prefix)
    await old.ready()
    expect(await redis.get(recordFormatKey(prefix))).toBeNull()
    await park(old, 'old-1', 1_500)
    expect((await storedOf(old, 'old-1')).every((v) => v.startsWith('{'))).toBe(true)
    await Promise.all(workers.splice(0).map((w) => w.close()))

    // every process runs this version now: the operator sets format 2, the next hosts write arrays
    await redis.set(recordFormatKey(prefix), '2')
    const host = hostOn(prefix)
    const result = await host
      .open(naps, { sessionId: 'old-1' })
      .runTool({ name: 'nap', input: { ms: 1_500 }, toolCallId: 'toolu_01AbCdEfGhIjKlMnOpQrStUv' }, { timeoutMs: patient(30_000) })
    expect(result).toEqual({ before: 'b', after: 'a' })
    const stored = await storedOf(host, 'old-1')
    expect(stored.slice(0, 5).every((v) => v.startsWith('{'))).toBe(true)
    // the step after the wake-up is stored as an array, the result as an object
    expect(stored.slice(5).map((v) => v[0])).toEqual(['[', '{'])
    expect(await typesOf(host, 'old-1')).toEqual([...PARKED, 'harness.tool.step', 'harness.tool.result'])
  })
})
