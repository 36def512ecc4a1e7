// Test rig shared by every integration test: where Redis comes from, and how
// each test keeps to its own keys so files can run in parallel on one server.
import { randomBytes } from 'node:crypto'
import type { RedisOptions } from 'ioredis'
import { createRedisClient, type RedisClient } from '../src/index.js'
import { bullPrefix } from '../src/queue/index.js'
import { defaultShards, isCluster, shardOf } from '../src/log/index.js'
import { hasRedisServerBinary, startRedisServer, type RedisServerHandle, type RedisServerOptions } from '../src/testing/redisServer.js'

// Module-level, and vitest isolates modules per test file: one Redis per file.
let redisUrl: Promise<string> | undefined

export async function getRedisUrl(): Promise<string> {
  redisUrl ??= resolveRedisUrl()
  return redisUrl
}

/**
 * A client for the tests' Redis: a plain Redis, or a Cluster when the URL lists several nodes (the
 * cluster run, `npm run test:cluster`, sets REDIS_URL to the nodes of the Cluster it started).
 */
export function rigClient(url: string, options: RedisOptions = {}): RedisClient {
  return createRedisClient(url, options)
}

/** The BullMQ prefix of a session's shard (DH_SHARDS shards, as the hosts of the tests use). */
export function queuePrefix(prefix: string, sessionId: string): string {
  const shards = defaultShards()
  return bullPrefix(prefix, shardOf(sessionId, shards), shards)
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

async function withClient<T>(url: string, fn: (redis: RedisClient) => Promise<T>): Promise<T> {
  // Fail fast: a rig helper should report a dead Redis, not retry forever.
  const redis = rigClient(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true })
  try {
    await redis.connect()
    return await fn(redis)
  } finally {
    redis.disconnect()
  }
}

// Substring match, so both `prefix:...` keys and hash-tagged `{prefix}...` keys are found. On a
// Cluster every master is scanned.
async function scanMatching(redis: RedisClient, prefix: string, onBatch: (keys: string[]) => Promise<void>): Promise<void> {
  const match = `*${escapeGlob(prefix)}*`
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
    let cursor = '0'
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) await onBatch(keys)
    } while (cursor !== '0')
  }
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
      // one key a command: on a Cluster the keys of one batch lie in several slots
      await Promise.all(keys.map((key) => redis.unlink(key)))
    })
  })
}

export async function startPrivateRedis(opts: RedisServerOptions = {}): Promise<RedisServerHandle> {
  return startRedisServer({ appendonly: true, ...opts })
}
