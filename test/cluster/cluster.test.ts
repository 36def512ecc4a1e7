// What only a Redis Cluster shows: shards spread over the masters, wake-ups on sharded pub/sub, and a
// changed shard count refused. Runs in `npm run test:cluster` (REDIS_URL lists the cluster's masters).
import { Queue } from 'bullmq'
import { Cluster } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { createHarnessHost } from '../../src/index.js'
import { ShardCountError } from '../../src/errors/index.js'
import { parseClusterNodes } from '../../src/harness/connection.js'
import { defaultShards, indexKeys, isCluster, shardBase, shardOf, toolJobId } from '../../src/log/index.js'
import { toolQueueName } from '../../src/queue/index.js'
import { shop } from '../fixtures/shop.js'
import { quiet, useInProcessHosts } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { spawnWorker } from '../helpers/workerProcess.js'
import { cleanupPrefix, getRedisUrl, queuePrefix, rigClient, scanKeys, uniquePrefix } from '../rig.js'

describe('on a Redis Cluster', () => {
  const hosts = useInProcessHosts()

  it('each shard of DH_SHARDS lies on another master, so queues and sessions spread over all of them', async () => {
    const redis = rigClient(await getRedisUrl())
    hosts.defer(() => redis.disconnect())
    if (!isCluster(redis)) throw new Error('test:cluster runs against a Cluster')
    await redis.ping()
    const shards = defaultShards()
    expect(shards).toBe(3)
    const owners = new Set<string>()
    for (let shard = 0; shard < shards; shard++) {
      const key = `${shardBase('p', shard, shards)}:x`
      const slot = Number(await redis.cluster('KEYSLOT', key))
      // the slot's master, by ioredis' slot map (first node of the slot)
      owners.add(redis.slots[slot]![0]!)
    }
    expect(owners.size).toBe(3)
  })

  it('a result lands and wakes its waiter through SSUBSCRIBE on the shard of its session', async () => {
    const { host, prefix } = hosts.start(shop, 'cluster-wake')
    const redis = rigClient(await getRedisUrl())
    hosts.defer(() => redis.disconnect())
    if (!isCluster(redis)) throw new Error('test:cluster runs against a Cluster')
    const sessions = ['w-a', 'w-b', 'w-c', 'w-d', 'w-e', 'w-f']
    const results = await Promise.all(
      sessions.map((sessionId) => host.open(shop, { sessionId }).runTool({ name: 'lookup', input: { sku: sessionId } })),
    )
    expect(results).toHaveLength(sessions.length)
    // every shard's channel has a sharded subscriber on its master; no plain channel is used
    const shardChannels = new Set<string>()
    const plainChannels = new Set<string>()
    for (const node of redis.nodes('master')) {
      for (const c of (await node.call('PUBSUB', 'SHARDCHANNELS', `${prefix}:*`)) as string[]) shardChannels.add(c)
      for (const c of (await node.pubsub('CHANNELS', `${prefix}:*`)) as string[]) plainChannels.add(c)
    }
    const shards = defaultShards()
    expect([...shardChannels].sort()).toEqual(Array.from({ length: shards }, (_, s) => indexKeys(prefix, s, shards).events).sort())
    expect(plainChannels.size).toBe(0)
  })

  it('a host with another shard count than the deployment was created with is refused with ShardCountError', async () => {
    const url = await getRedisUrl()
    const prefix = uniquePrefix('cluster-shards')
    hosts.defer(() => cleanupPrefix(url, prefix))
    const first = createHarnessHost({ redis: url, harnesses: [shop], prefix, logger: quiet, shards: 3 })
    hosts.defer(() => first.close())
    await first.ready()
    const other = createHarnessHost({ redis: url, harnesses: [shop], prefix, logger: quiet, shards: 6 })
    hosts.defer(() => other.close())
    const refused = await other.ready().catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ShardCountError)
    expect(refused).toMatchObject({ code: 'config', stored: 3, given: 6 })
    expect((refused as Error).message).toContain('DH_SHARDS=3')
    await expect(other.sweep()).rejects.toBeInstanceOf(ShardCountError)
    // a session of that host writes nothing either, also from a process that never called ready()
    const bare = createHarnessHost({ redis: url, harnesses: [shop], prefix, logger: quiet, shards: 6 })
    hosts.defer(() => bare.close())
    const session = bare.open(shop, { sessionId: 'wrong-count' })
    await expect(session.prompt('hello')).rejects.toBeInstanceOf(ShardCountError)
    await expect(session.runTool({ name: 'lookup', input: { sku: 'x' } })).rejects.toBeInstanceOf(ShardCountError)
    await expect(session.abort('some-input')).rejects.toBeInstanceOf(ShardCountError)
    expect((await scanKeys(url, prefix)).filter((key) => key.includes('wrong-count'))).toEqual([])
  })

  it('a host takes the cluster as { cluster: nodes, options } or as an ioredis Cluster', async () => {
    const url = await getRedisUrl()
    const { cluster: nodes } = parseClusterNodes(url)
    const given = new Cluster(nodes, { redisOptions: { connectionName: 'mine' } })
    hosts.defer(() => given.disconnect())
    for (const [label, redis] of [
      ['nodes', { cluster: nodes, options: { slotsRefreshTimeout: 2_000 } }],
      ['instance', given],
    ] as const) {
      const prefix = uniquePrefix(`cluster-${label}`)
      hosts.defer(() => cleanupPrefix(url, prefix))
      const host = createHarnessHost({ redis, harnesses: [shop], prefix, logger: quiet })
      const workers = host.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
      hosts.defer(() => host.close())
      hosts.defer(() => workers.close())
      await host.ready()
      expect(await host.open(shop, { sessionId: `form-${label}` }).runTool({ name: 'lookup', input: { sku: label } })).toBeDefined()
    }
  })

  it('workers serve the shards they are given: a worker process for shard 0 (REDIS_CLUSTER_NODES, WORKER_SHARDS), a host for the rest', async () => {
    const url = await getRedisUrl()
    const shards = defaultShards()
    const prefix = uniquePrefix('cluster-subset')
    hosts.defer(() => cleanupPrefix(url, prefix))
    // a session in shard 0 and one in another shard
    const ids = Array.from({ length: 20 }, (_, i) => `sub-${i}`)
    const inZero = ids.find((id) => shardOf(id, shards) === 0)!
    const elsewhere = ids.find((id) => shardOf(id, shards) !== 0)!
    const host = createHarnessHost({ redis: url, harnesses: [shop], prefix, logger: quiet })
    hosts.defer(() => host.close())
    const worker = await spawnWorker({
      redisUrl: url, // for the fixture's own client; the worker's host takes REDIS_CLUSTER_NODES first
      prefix,
      env: { REDIS_CLUSTER_NODES: url.replaceAll('redis://', ''), WORKER_SHARDS: '0', DH_SHARDS: String(shards) },
    })
    hosts.defer(() => worker.kill('SIGKILL'))
    const waiting = host.open(shop, { sessionId: elsewhere }).runTool({ name: 'lookup', input: { sku: 'b' }, toolCallId: 'later' })
    // shard 0's call lands through the worker process while the other shard's job waits untaken
    await host.open(shop, { sessionId: inZero }).runTool({ name: 'lookup', input: { sku: 'a' } })
    const redis = rigClient(url, { maxRetriesPerRequest: null })
    hosts.defer(() => redis.disconnect())
    const tools = new Queue(toolQueueName(shop.name), { connection: redis, prefix: queuePrefix(prefix, elsewhere) })
    hosts.defer(() => tools.close())
    await until(async () => (await tools.getJobState(toolJobId(elsewhere, 'later'))) === 'waiting', 'the other shard to hold its job')
    expect(worker.lines.some((l) => l.sessionId === elsewhere)).toBe(false)
    // a host serving the other shards takes it
    const rest = Array.from({ length: shards - 1 }, (_, i) => i + 1)
    const workers = host.startWorkers({ concurrency: 2, sweepEveryMs: 0, shards: rest })
    hosts.defer(() => workers.close())
    expect(await waiting).toBeDefined()
    expect(() => host.startWorkers({ shards: [shards] })).toThrow(/does not exist/)
  })
})
