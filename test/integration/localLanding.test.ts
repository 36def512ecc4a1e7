import { afterEach, describe, expect, it } from 'vitest'
import { FencedError } from '../../src/errors/index.js'
import { Notifier } from '../../src/harness/notifier.js'
import { messageKey, SessionLog, type RedisClient } from '../../src/log/index.js'
import { cleanupPrefix, getRedisUrl, rigClient, uniquePrefix } from '../rig.js'

describe('a landing wakes a waiter of this process from its reply (SessionLogOptions.landed)', () => {
  const closers: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  async function rig() {
    const url = await getRedisUrl()
    const prefix = uniquePrefix('landed')
    const redis: RedisClient = rigClient(url)
    // subscribed to a channel no landing publishes on: only the reply's delivery can wake a waiter
    const notifier = new Notifier(redis, [`${prefix}:elsewhere`])
    const heard: Array<[string, string]> = []
    const log = new SessionLog(redis, prefix, 's1', {
      landed: (key, record) => {
        heard.push([key, record])
        notifier.deliver(key, record)
      },
    })
    closers.push(async () => {
      await notifier.close()
      redis.disconnect()
      await cleanupPrefix(url, prefix)
    })
    return { notifier, log, heard }
  }

  it('a runTool-style waiter resolves with the landed record though no PUBLISH reaches it', async () => {
    const { notifier, log } = await rig()
    const begin = await log.calls.beginCall('c1', 'three', 'safe')
    const waiting = notifier.wait(messageKey('call', 's1', 'c1'), async () => undefined, 'Tool call c1', {
      fresh: true,
      timeoutMs: 5_000,
      fromPayload: (payload) => JSON.parse(payload) as unknown,
    })
    await log.calls.landResult({ toolCallId: 'c1', epoch: begin.epoch }, 'three', { result: { ok: 1 } })
    // the check never finds it and the subscriber hears nothing: without the delivery this times out
    expect(await waiting).toMatchObject({ type: 'harness.tool.result', toolCallId: 'c1', name: 'three', result: { ok: 1 } })
  })

  it('a fenced landing delivers nothing; the landing under the newer epoch delivers its record once', async () => {
    const { log, heard } = await rig()
    const first = await log.calls.beginCall('c2', 'three', 'safe')
    const second = await log.calls.beginCall('c2', 'three', 'safe')
    expect(second.epoch).toBeGreaterThan(first.epoch)
    await expect(log.calls.landResult({ toolCallId: 'c2', epoch: first.epoch }, 'three', { result: 'zombie' })).rejects.toBeInstanceOf(
      FencedError,
    )
    expect(heard).toEqual([])
    await log.calls.landResult({ toolCallId: 'c2', epoch: second.epoch }, 'three', { result: 'kept' })
    expect(heard).toHaveLength(1)
    expect(heard[0]![0]).toBe(messageKey('call', 's1', 'c2'))
    expect(JSON.parse(heard[0]![1])).toMatchObject({ toolCallId: 'c2', result: 'kept' })
    // the same record the PUBLISH carries, and the one the log kept
    const state = await log.calls.getCall('c2')
    expect(state?.result).toMatchObject({ toolCallId: 'c2', result: 'kept' })
  })
})
