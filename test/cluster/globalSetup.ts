// globalSetup of `npm run test:cluster`: starts a 3-master Redis Cluster from the redis-server binary
// on free ports (no data on disk), points the suites at it (REDIS_URL lists its masters; the rig and
// the hosts open a Cluster client for such a list), and stops it when the run ends.
import { startRedisCluster, type RedisClusterHandle } from '../../src/testing/index.js'

let cluster: RedisClusterHandle | undefined

export async function setup(): Promise<void> {
  cluster = await startRedisCluster({ masters: 3 })
  process.env.REDIS_URL = cluster.url
}

export async function teardown(): Promise<void> {
  await cluster?.stop()
}
