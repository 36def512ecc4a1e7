// A parked call's BullMQ job keeps what its id does not name (issue 52, docs/decisions/parked-call-memory.md):
// the park's write slims the job's hash, and the woken job runs its logged call as before (R7, R8).
import { Writable } from 'node:stream'
import { toolDefinition } from '@tanstack/ai'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, WaitTimeoutError, type HarnessHost } from '../../src/index.js'
import { toolJobId, type RedisClient } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { questionIdOf } from '../../src/tool/index.js'
import { shop } from '../fixtures/shop.js'
import { batch, until } from '../helpers/log.js'
import { cleanupPrefix, getRedisUrl, queuePrefix, rigClient, uniquePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const note = durableTool(
  toolDefinition({ name: 'note', description: 'Sleep, then say so', inputSchema: z.object({ ms: z.number(), text: z.string() }) }),
  async ({ ms, text }, { step }) => {
    await step.do('before', async () => text.length)
    await step.sleep('nap', ms)
    return { text }
  },
)
const notes = defineHarness({ name: 'parked-notes', adapter: scriptedModel([]), tools: [note] })

let url: string
let redis: RedisClient
let host: HarnessHost
let workers: { close(): Promise<unknown> }
let prefix: string
const lines: Array<Record<string, unknown>> = []

beforeAll(async () => {
  url = await getRedisUrl()
  redis = rigClient(url)
  prefix = uniquePrefix('parked-job')
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  host = createHarnessHost({ redis: url, harnesses: [notes, shop], prefix, logger: pino({ level: 'debug' }, sink) })
  workers = host.startWorkers({ concurrency: 4 })
})

afterAll(async () => {
  await workers?.close()
  await host?.close()
  await cleanupPrefix(url, prefix)
  redis?.disconnect()
})

const jobKey = (harness: string, sessionId: string, toolCallId: string) =>
  `${queuePrefix(prefix, sessionId)}:${toolQueueName(harness)}:${toolJobId(sessionId, toolCallId)}`

async function parkedJob(key: string) {
  await until(async () => (await redis.hget(key, 'delay')) !== null && (await redis.hget(key, 'delay')) !== '0', `${key} delayed`)
  return { fields: await redis.hgetall(key), encoding: await redis.object('ENCODING', key) }
}

const disagreements = () => lines.filter((l) => String(l.msg).includes('disagrees'))

describe('a parked call keeps a slim BullMQ job', () => {
  it('R7: a sleeping runTool call: data { input }, options without the job id, a listpack; it wakes and lands as logged', async () => {
    const sessionId = '0f4c7d9e-2b1a-4c3d-9e8f-7a6b5c4d3e2f'
    const toolCallId = 'toolu_01AbCdEfGhIjKlMnOpQrStUv'
    const s = host.open(notes, { sessionId })
    const call = s.runTool({ name: 'note', input: { ms: 1500, text: 'hi' }, toolCallId }, { timeoutMs: patient(30_000) })
    const { fields, encoding } = await parkedJob(jobKey(notes.name, sessionId, toolCallId))
    expect(JSON.parse(fields.data!)).toEqual({ input: { ms: 1500, text: 'hi' } })
    expect(JSON.parse(fields.opts!)).toEqual({ attempts: 5, backoff: { type: 'exponential', delay: 500 } })
    // BullMQ's own fields stay: its name, counters and times; a priority of 0 and processedOn go
    expect(fields).toMatchObject({ name: 'note', ats: '1' })
    expect(Number(fields.timestamp)).toBeGreaterThan(0)
    expect(fields).not.toHaveProperty('priority')
    expect(fields).not.toHaveProperty('processedOn')
    expect(encoding).toBe('listpack')

    expect(await call).toEqual({ text: 'hi' })
    // a planned resume, begun from the slim data (its fingerprint is the logged call's: the log was not read)
    const started = (await s.log.read({ types: ['harness.tool.started'] })).map((e) => (e.record as { reason: string }).reason)
    expect(started).toEqual(['fresh'])
    const begins = lines.filter((l) => l.sessionId === sessionId && l.msg === 'tool call started').map((l) => l.kind)
    expect(begins).toContain('resume')
    expect(lines.filter((l) => l.sessionId === sessionId && String(l.msg).startsWith('tool job began from its logged call'))).toEqual([])
    expect(disagreements()).toEqual([])
  })

  it('R7: an input over 64 B keeps its hash table; its data and options are slimmed in place', async () => {
    const sessionId = 'parked-wide'
    const text = 'x'.repeat(200)
    const s = host.open(notes, { sessionId })
    const call = s.runTool({ name: 'note', input: { ms: 1000, text }, toolCallId: 'wide-1' }, { timeoutMs: patient(30_000) })
    const { fields, encoding } = await parkedJob(jobKey(notes.name, sessionId, 'wide-1'))
    expect(JSON.parse(fields.data!)).toEqual({ input: { ms: 1000, text } })
    expect(fields.opts).not.toContain('jobId')
    expect(encoding).toBe('hashtable')
    expect(await call).toEqual({ text })
    expect(disagreements()).toEqual([])
  })

  it('R7: a call of a turn keeps its turn and parent: the woken call lands and the turn settles', async () => {
    const sessionId = 'parked-turn'
    const s = host.open(shop, { sessionId })
    const { inputId } = await s.prompt(batch([{ name: 'nap', input: { ms: 1000 } }]))
    await until(async () => (await s.log.read({ types: ['harness.model.response'] })).length > 0, 'the model response')
    const [response] = await s.log.read({ types: ['harness.model.response'] })
    const toolCallId = (response!.record as { toolCalls: Array<{ toolCallId: string }> }).toolCalls[0]!.toolCallId
    const { fields } = await parkedJob(jobKey(shop.name, sessionId, toolCallId))
    expect(JSON.parse(fields.data!)).toEqual({ input: { ms: 1000 }, inputId })
    expect(JSON.parse(fields.opts!)).toMatchObject({ parent: { id: `turn|${sessionId}|${inputId}` } })
    expect(fields.opts).not.toContain('jobId')
    expect(fields.parentKey).toContain(`turn|${sessionId}|${inputId}`)
    expect((await s.settled(inputId, { timeoutMs: patient(30_000) })).outcome).toBe('completed')
    expect(disagreements()).toEqual([])
  })

  it('R8: an asking call answered while parked wakes with its slim job and returns the answer', async () => {
    const sessionId = 'parked-ask'
    const s = host.open(shop, { sessionId })
    const call = s.runTool({ name: 'approve', input: { amount: 7 }, toolCallId: 'ask-1' }, { timeoutMs: 0 }).catch((e: unknown) => {
      if (!(e instanceof WaitTimeoutError)) throw e
    })
    await call
    const { fields, encoding } = await parkedJob(jobKey(shop.name, sessionId, 'ask-1'))
    expect(JSON.parse(fields.data!)).toEqual({ input: { amount: 7 } })
    expect(encoding).toBe('listpack')
    await s.answer(questionIdOf('ask-1', 'approve'), { approved: true })
    expect(await s.runTool({ name: 'approve', input: { amount: 7 }, toolCallId: 'ask-1' }, { timeoutMs: patient(30_000) })).toEqual({
      approved: true,
    })
    expect(disagreements()).toEqual([])
  })
})
