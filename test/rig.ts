// Test rig shared by every integration test: where Redis comes from, and how
// each test keeps to its own keys so files can run in parallel on one server.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { hasRedisServerBinary, startRedisServer, type RedisServerHandle, type RedisServerOptions } from '../src/testing/redisServer.js'

// Module-level, and vitest isolates modules per test file: one Redis per file.
let redisUrl: Promise<string> | undefined

export async function getRedisUrl(): Promise<string> {
  redisUrl ??= resolveRedisUrl()
  return redisUrl
}

async function resolveRedisUrl(): Promise<string> {
  const fromEnv = process.env.REDIS_URL
  if (fromEnv) return fromEnv
  // The default path: no Docker and no env needed. redisServer.ts kills the
  // server when this process exits, so no afterAll is required.
  if (hasRedisServerBinary()) return (await startRedisServer()).url
  return startContainer()
}

async function startContainer(): Promise<string> {
  try {
    // Lazy: testcontainers is heavy and only needed when nothing else is available.
    const { GenericContainer } = await import('testcontainers')
    // Testcontainers' reaper removes the container when this process exits.
    const container = await new GenericContainer('redis:7-alpine').withExposedPorts(6379).start()
    return `redis://${container.getHost()}:${container.getMappedPort(6379)}`
  } catch (err) {
    throw new Error(
      'No Redis for the tests: REDIS_URL is not set, no `redis-server` binary is on PATH, ' +
        `and testcontainers could not start redis:7-alpine (${err instanceof Error ? err.message : String(err)}). ` +
        'Set REDIS_URL=redis://host:port, or install redis-server (e.g. `apt-get install redis-server`), or start Docker.',
      { cause: err },
    )
  }
}

export function uniquePrefix(label = 'x'): string {
  // Only [A-Za-z0-9_-], so the prefix is never a glob pattern for SCAN MATCH.
  const safe = label.replace(/[^A-Za-z0-9_-]/g, '_')
  return `t-${safe}-${randomBytes(4).toString('hex')}`
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}

async function withClient<T>(url: string, fn: (redis: Redis) => Promise<T>): Promise<T> {
  // Fail fast: a rig helper should report a dead Redis, not retry forever.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true })
  try {
    await redis.connect()
    return await fn(redis)
  } finally {
    redis.disconnect()
  }
}

// Substring match, so both `prefix:...` keys and hash-tagged `{prefix}...` keys are found.
async function scanMatching(redis: Redis, prefix: string, onBatch: (keys: string[]) => Promise<void>): Promise<void> {
  const match = `*${escapeGlob(prefix)}*`
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await onBatch(keys)
  } while (cursor !== '0')
}

export async function scanKeys(url: string, prefix: string): Promise<string[]> {
  return withClient(url, async (redis) => {
    const found = new Set<string>()
    await scanMatching(redis, prefix, async (keys) => {
      for (const key of keys) found.add(key)
    })
    return [...found].sort()
  })
}

// Deletes only this test's keys: the Redis may be shared, so never FLUSHALL.
export async function cleanupPrefix(url: string, prefix: string): Promise<void> {
  await withClient(url, async (redis) => {
    await scanMatching(redis, prefix, async (keys) => {
      await redis.unlink(...keys)
    })
  })
}

export async function startPrivateRedis(opts: RedisServerOptions = {}): Promise<RedisServerHandle> {
  return startRedisServer({ appendonly: true, ...opts })
}
