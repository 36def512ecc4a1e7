import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis'
import { isAuthFailure, redactCredentials } from '../credentials.js'
import { ConfigError, RedisAuthError, RedisUnavailableError } from '../errors/index.js'
import type { RedisClient } from '../log/index.js'
import type { Logger } from 'pino'

/**
 * Where Redis is: a `redis://` / `rediss://` URL (ACL user and password in it, TLS for `rediss`),
 * ioredis options (TLS options under `tls`), a Redis Cluster (`{ cluster: nodes, options? }` with
 * ioredis ClusterOptions, or an ioredis `Cluster`, whose nodes and options are copied), or a
 * comma-separated list of node URLs, which names a Cluster's seed nodes (REDIS_CLUSTER_NODES' form).
 */
export type RedisConnection = string | RedisOptions | { cluster: ClusterNode[]; options?: ClusterOptions } | Cluster

/** A parsed connection: opens clients with overrides, and names the server for logs (no password). */
export interface RedisTarget {
  readonly cluster: boolean
  readonly where: string
  open(overrides?: RedisOptions, clusterOverrides?: ClusterOptions): RedisClient
}

function isClusterSpec(spec: RedisConnection): spec is { cluster: ClusterNode[]; options?: ClusterOptions } {
  return typeof spec === 'object' && spec !== null && 'cluster' in spec && Array.isArray(spec.cluster)
}

/** `redis://user:pass@host:port` or `host:port` → a node and the options its URL carries (credentials, TLS). */
function parseNode(text: string): { node: { host: string; port: number }; options: RedisOptions } {
  const url = new URL(/^[a-z]+:\/\//i.test(text) ? text : `redis://${text}`)
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new ConfigError(
      `A Redis node must be redis://host:port, rediss://host:port or host:port, not ${JSON.stringify(redactCredentials(text))}.`,
    )
  const options: RedisOptions = {}
  if (url.username) options.username = decodeURIComponent(url.username)
  if (url.password) options.password = decodeURIComponent(url.password)
  if (url.protocol === 'rediss:') options.tls = {}
  return { node: { host: url.hostname || '127.0.0.1', port: Number(url.port || 6379) }, options }
}

/** A comma-separated list of cluster seed nodes (URLs or host:port). */
export function parseClusterNodes(text: string): { cluster: ClusterNode[]; options: ClusterOptions } {
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
  if (parts.length === 0) throw new ConfigError('A Redis Cluster needs at least one node (host:port or redis://host:port).')
  const parsed = parts.map(parseNode)
  return {
    cluster: parsed.map((p) => p.node),
    options: { redisOptions: parsed.reduce<RedisOptions>((merged, p) => Object.assign(merged, p.options), {}) },
  }
}

/**
 * Options every client of ours gets on a Cluster: commands wait across a failover (ioredis follows
 * MOVED/TRYAGAIN and refreshes the slot map) instead of failing.
 */
const CLUSTER_DEFAULTS: ClusterOptions = {
  retryDelayOnFailover: 200,
  retryDelayOnClusterDown: 300,
  retryDelayOnTryAgain: 200,
  maxRedirections: 32,
}

export function resolveRedis(spec: RedisConnection): RedisTarget {
  if (typeof spec === 'string' && spec.includes(',')) return resolveRedis(parseClusterNodes(spec))
  if (spec instanceof Cluster) {
    // the nodes it was made with: ioredis keeps them in a private field, untyped in its declarations
    const nodes: ClusterNode[] = spec['startupNodes']
    return resolveRedis({ cluster: nodes, options: spec.options })
  }
  if (isClusterSpec(spec)) {
    const { cluster: nodes, options = {} } = spec
    if (nodes.length === 0) throw new ConfigError('createHarnessHost: redis.cluster needs at least one node.')
    return {
      cluster: true,
      where: `cluster ${redactCredentials(nodes.map((n) => (typeof n === 'object' ? `${n.host ?? '127.0.0.1'}:${n.port ?? 6379}` : String(n))).join(','))}`,
      open: (overrides = {}, clusterOverrides = {}) =>
        new Cluster(nodes, {
          ...CLUSTER_DEFAULTS,
          ...options,
          ...(overrides.lazyConnect === undefined ? {} : { lazyConnect: overrides.lazyConnect }),
          ...clusterOverrides,
          redisOptions: { ...options.redisOptions, ...overrides },
        }),
    }
  }
  if (typeof spec === 'string') {
    return { cluster: false, where: redactCredentials(spec), open: (overrides = {}) => new Redis(spec, overrides) }
  }
  const options = spec
  return {
    cluster: false,
    where: `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`,
    open: (overrides = {}) => new Redis({ ...options, ...overrides }),
  }
}

/**
 * A client for `spec` (what createHarnessHost takes): a Redis, or a Cluster. For tools and scripts
 * that need their own connection to the deployment's Redis.
 */
export function createRedisClient(spec: RedisConnection, overrides: RedisOptions = {}): RedisClient {
  return resolveRedis(spec).open(overrides)
}

/**
 * Resolves when Redis answers a PING on a connection of its own that does not retry; rejects with
 * RedisAuthError when the credentials are refused, RedisUnavailableError otherwise or after `timeoutMs`.
 */
export async function probeRedis(target: RedisTarget, timeoutMs: number): Promise<void> {
  const probe = target.open(
    { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true },
    { lazyConnect: true, clusterRetryStrategy: () => null },
  )
  let refused: Error | undefined
  probe.on('error', (err) => {
    if (isAuthFailure(err)) refused = err
  })
  try {
    await Promise.race([
      probe.connect().then(() => probe.ping()),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs)),
    ])
  } catch (error) {
    const authError = refused ?? (error instanceof Error && isAuthFailure(error) ? error : undefined)
    if (authError) throw new RedisAuthError(target.where, authError.message)
    throw new RedisUnavailableError(target.where, error)
  } finally {
    probe.disconnect()
  }
}

/** A connection's 'error' listener: one line per 10 s, not a stack per retry. */
export function connectionErrorLogger(logger: Logger, where: string): (err: Error) => void {
  let lastError = 0
  return (err) => {
    if (Date.now() - lastError > 10_000) {
      if (isAuthFailure(err))
        logger.warn({ err: err.message, redis: where }, 'Redis authentication failed; retrying (check the user and password in REDIS_URL)')
      else logger.warn({ err: err.message, redis: where }, 'Redis connection error; retrying')
    }
    lastError = Date.now()
  }
}
