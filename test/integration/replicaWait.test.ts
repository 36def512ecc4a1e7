// The WAIT option (createHarnessHost({ waitReplicas }), REDIS_WAIT_REPLICAS): a step or result write
// counts as done only once a replica has it. A private master and replica, from the redis-server binary.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StorageError } from '../../src/errors/index.js'
import { SessionLog, type RedisClient } from '../../src/log/index.js'
import { startRedisServer, type RedisServerHandle } from '../../src/testing/index.js'
import { until } from '../helpers/log.js'
import { rigClient } from '../rig.js'

describe('waitReplicas: step and result writes wait for a replica', () => {
  let master: RedisServerHandle
  let replica: RedisServerHandle
  let redis: RedisClient
  let onReplica: RedisClient
  beforeAll(async () => {
    master = await startRedisServer()
    replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(master.port)] })
    redis = rigClient(master.url, { maxRetriesPerRequest: null })
    onReplica = rigClient(replica.url)
    await until(async () => /master_link_status:up/.test(await onReplica.info('replication')), 'the replica to sync')
  })
  afterAll(async () => {
    redis?.disconnect()
    onReplica?.disconnect()
    await replica?.stop()
    await master?.stop()
  })

  it('a saved step and a landed result are on the replica when the write returns', async () => {
    const log = new SessionLog(redis, 'wait', 's1', { shards: 1, waitReplicas: { replicas: 1, timeoutMs: 1_000 } })
    const { epoch } = await log.calls.beginCall('c1', 'charge', 'safe')
    const fence = { toolCallId: 'c1', epoch }
    await log.calls.saveStep(
      fence,
      'charge',
      { id: 'ch_1' },
      { type: 'harness.tool.step', toolCallId: 'c1', name: 'charge', value: { id: 'ch_1' } },
    )
    expect(await onReplica.hget(log.stream.keys.steps, 'c1\0charge')).toBe('{"id":"ch_1"}')
    await log.calls.landResult(fence, 'charge', { result: { ok: true } })
    expect(JSON.parse((await onReplica.hget(log.stream.keys.calls, 'c1'))!)).toMatchObject({ s: 'done' })
  })

  it('with no replica to acknowledge, the write is retried for writeRetryMs, then refused as a StorageError', async () => {
    onReplica.disconnect()
    await replica.stop()
    const log = new SessionLog(redis, 'wait', 's2', { shards: 1, writeRetryMs: 300, waitReplicas: { replicas: 1, timeoutMs: 50 } })
    const { epoch } = await log.calls.beginCall('c1', 'charge', 'safe')
    const error = await log.calls
      .saveStep({ toolCallId: 'c1', epoch }, 'charge', { id: 'ch_2' }, { type: 'harness.tool.step', toolCallId: 'c1', name: 'charge' })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StorageError)
    expect(String((error as StorageError).cause)).toMatch(/0 of 1 replica/)
  })
})
