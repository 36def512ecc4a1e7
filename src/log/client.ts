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

/**
 * Runs `send` with the connection's socket corked until the current microtasks have run: the command
 * it sends and the ones sent right behind it in the same turn (BullMQ's job add behind runTool's
 * request) leave in one socket write instead of one each. A landing is not corked: its write waited
 * for the end of the tick, which cost more than the write it saved (docs/decisions.md). The order
 * is unchanged, so Redis runs them as sent. A Cluster, a connection not ready, or one that ioredis
 * auto-pipelines (it batches a tick's commands itself) sends as usual.
 */
export function sendCorked<T>(client: RedisClient, send: () => T): T {
  const socket = isCluster(client) || client.status !== 'ready' || client.options.enableAutoPipelining ? undefined : client.stream
  if (!socket || typeof socket.cork !== 'function') return send()
  socket.cork()
  try {
    return send()
  } finally {
    process.nextTick(() => socket.uncork())
  }
}
