import type { Cluster, Redis, RedisOptions } from 'ioredis'

/** A connection to one Redis or to a Redis Cluster: every part of the product takes either. */
export type RedisClient = Redis | Cluster

export function isCluster(client: RedisClient): client is Cluster {
  return client.isCluster
}

/**
 * A new connection like `client` (the same server or cluster, credentials and TLS), with `overrides`
 * applied to each node's connection options; `cluster` is merged into a Cluster's own options.
 */
export function duplicateClient(
  client: RedisClient,
  overrides: RedisOptions = {},
  cluster: { shardedSubscribers?: boolean; clusterRetryStrategy?: () => null } = {},
): RedisClient {
  if (isCluster(client)) return client.duplicate([], { ...cluster, redisOptions: overrides })
  return client.duplicate(overrides)
}

/** How a script announces a landing: SPUBLISH on a Cluster (it stays on the slot's shard), PUBLISH on one Redis. */
export function publishCommand(client: RedisClient): 'PUBLISH' | 'SPUBLISH' {
  return isCluster(client) ? 'SPUBLISH' : 'PUBLISH'
}
