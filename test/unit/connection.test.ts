import { Cluster, Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/errors/index.js'
import { parseClusterNodes, resolveRedis } from '../../src/harness/connection.js'

describe('where Redis is (createHarnessHost({ redis }), REDIS_URL, REDIS_CLUSTER_NODES)', () => {
  it('a rediss:// URL with an ACL user and password: TLS on, credentials kept, never shown', () => {
    const target = resolveRedis('rediss://app:s3cret@redis.example:6380/0')
    expect(target.cluster).toBe(false)
    expect(target.where).toBe('rediss://app:***@redis.example:6380/0')
    const client = target.open({ lazyConnect: true }) as Redis
    expect(client.options).toMatchObject({ host: 'redis.example', port: 6380, username: 'app', password: 's3cret', tls: {} })
    client.disconnect()
  })

  it('ioredis options (TLS options included) are used as given', () => {
    const client = resolveRedis({ host: 'h', port: 7000, tls: { servername: 'h' } }).open({ lazyConnect: true }) as Redis
    expect(client.options).toMatchObject({ host: 'h', port: 7000, tls: { servername: 'h' } })
    client.disconnect()
  })

  it('a comma-separated list names a Cluster: nodes, and the credentials and TLS of their URLs for every node', () => {
    expect(parseClusterNodes('rediss://u:p@a:7000, b:7001')).toEqual({
      cluster: [
        { host: 'a', port: 7000 },
        { host: 'b', port: 7001 },
      ],
      options: { redisOptions: { username: 'u', password: 'p', tls: {} } },
    })
    const target = resolveRedis('redis://a:7000,redis://b:7001')
    expect(target.cluster).toBe(true)
    const client = target.open({ lazyConnect: true })
    expect(client).toBeInstanceOf(Cluster)
    client.disconnect()
    expect(() => parseClusterNodes(' , ')).toThrow(ConfigError)
    expect(() => parseClusterNodes('http://a:1')).toThrow(ConfigError)
  })

  it('{ cluster: nodes, options } and an ioredis Cluster are Clusters; their options are kept', () => {
    const target = resolveRedis({ cluster: [{ host: 'a', port: 7000 }], options: { redisOptions: { password: 'p' } } })
    expect(target.where).toBe('cluster a:7000')
    const client = target.open({ lazyConnect: true }) as Cluster
    expect(client.options.redisOptions).toMatchObject({ password: 'p', lazyConnect: true })
    const given = new Cluster([{ host: 'b', port: 7001 }], { lazyConnect: true, redisOptions: { username: 'u' } })
    const copied = resolveRedis(given).open({ lazyConnect: true }) as Cluster
    expect(copied.options.redisOptions).toMatchObject({ username: 'u' })
    for (const c of [client, given, copied]) c.disconnect()
  })
})
