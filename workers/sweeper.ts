// Runs the recovery sweeper for a harness module: `sweeper <harness module>`.
// Env: REDIS_URL or REDIS_CLUSTER_NODES, DH_PREFIX, DH_SHARDS, SWEEP_EVERY_MS (default 10000), SHUTDOWN_GRACE_MS (default 25000), LOG_LEVEL.
import { startSweepTimer } from '../src/harness/host.js'
import { startProcess } from '../src/cli/processEnv.js'

await startProcess('sweeper', process.argv.slice(2), (host, logger) => {
  const timer = startSweepTimer(() => host.sweep(), Number(process.env.SWEEP_EVERY_MS ?? 10_000), logger)
  return { close: async () => timer.stop() }
})
