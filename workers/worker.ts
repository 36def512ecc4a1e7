// Runs the turn and tool workers of a harness module: `worker <harness module>`.
// Env: REDIS_URL or REDIS_CLUSTER_NODES, DH_PREFIX, DH_SHARDS, WORKER_SHARDS (default all), CONCURRENCY,
// SHUTDOWN_GRACE_MS (default 25000), LOG_LEVEL.
import { startProcess, workerShards } from '../src/cli/processEnv.js'

await startProcess('worker', process.argv.slice(2), (host) => {
  const shards = workerShards()
  return host.startWorkers({ concurrency: Number(process.env.CONCURRENCY ?? 10), ...(shards ? { shards } : {}) })
})
