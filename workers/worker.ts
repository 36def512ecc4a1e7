// Runs the turn and tool workers of a harness module: `worker <harness module>` (also `harness worker`).
// Env: REDIS_URL or REDIS_CLUSTER_NODES, DH_PREFIX, DH_SHARDS, WORKER_SHARDS (default all), CONCURRENCY,
// SHUTDOWN_GRACE_MS (default 25000), LOG_LEVEL, METRICS_PORT, DH_LOCAL_LANE (default on; off: BullMQ's public path only),
// DH_WORKER_LIVENESS (default on; off: a dead worker's jobs wait for their locks).
import { runWorker } from '../src/cli/commands/processes.js'

await runWorker(process.argv.slice(2))
