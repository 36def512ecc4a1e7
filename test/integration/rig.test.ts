import net from 'node:net'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { isRedisReachable, type RedisServerHandle } from '../../src/testing/redisServer.js'
import { cleanupPrefix, getRedisUrl, scanKeys, startPrivateRedis, uniquePrefix } from '../rig.js'

// No retries: a test should see a dead server as an error, not hang on reconnects.
function client(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null })
}

async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

describe('test rig', () => {
  const servers: RedisServerHandle[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()))
  })

  it('getRedisUrl gives a Redis that answers PING, and prefix helpers only touch their keys', async () => {
    const url = await getRedisUrl()
    const prefix = uniquePrefix('rig')
    const other = uniquePrefix('rig')
    const redis = client(url)
    try {
      expect(await redis.ping()).toBe('PONG')
      await redis.set(`${prefix}:a`, '1')
      await redis.set(`{${prefix}}:b`, '2')
      await redis.set(`${other}:c`, '3')

      expect(await scanKeys(url, prefix)).toEqual([`${prefix}:a`, `{${prefix}}:b`].sort())
      await cleanupPrefix(url, prefix)
      expect(await scanKeys(url, prefix)).toEqual([])
      expect(await redis.get(`${other}:c`)).toBe('3')
    } finally {
      await cleanupPrefix(url, other)
      redis.disconnect()
    }
  })

  it('startPrivateRedis keeps an acknowledged write across SIGKILL and restart (AOF)', async () => {
    const server = await startPrivateRedis()
    servers.push(server)
    const key = `${uniquePrefix('aof')}:k`

    const before = client(server.url)
    await before.set(key, 'survives')
    before.disconnect()

    await server.kill()
    expect(await isRedisReachable(server.url)).toBe(false)
    await server.restart()

    const after = client(server.url)
    try {
      expect(await after.get(key)).toBe('survives')
    } finally {
      after.disconnect()
    }
  })

  it('isRedisReachable is false for a closed port and true for a private server', async () => {
    expect(await isRedisReachable(`redis://127.0.0.1:${await closedPort()}`, 500)).toBe(false)
    expect(await isRedisReachable('not a url')).toBe(false)

    const server = await startPrivateRedis({ appendonly: false })
    servers.push(server)
    expect(await isRedisReachable(server.url)).toBe(true)
  })
})
