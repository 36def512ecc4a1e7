// What only a Redis Cluster shows: shards spread over the masters, wake-ups on sharded pub/sub, and a
// changed shard count refused. Runs in `npm run test:cluster` (REDIS_URL lists the cluster's masters).
import { describe, expect, it } from 'vitest'
import { createHarnessHost, ShardCountError } from '../../src/index.js'
import { defaultShards, indexKeys, isCluster, shardBase } from '../../src/log/index.js'
import { shop } from '../fixtures/shop.js'
import { quiet, useInProcessHosts } from '../helpers/hosts.js'
import { cleanupPrefix, getRedisUrl, rigClient, uniquePrefix } from '../rig.js'

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
  })
})
