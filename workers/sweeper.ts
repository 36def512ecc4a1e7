// Runs the recovery sweeper for a harness module: `sweeper <harness module>` (also `harness sweep`).
// Env: REDIS_URL or REDIS_CLUSTER_NODES, DH_PREFIX, DH_SHARDS, SWEEP_EVERY_MS (default 10000), SHUTDOWN_GRACE_MS (default 25000), LOG_LEVEL.
import { runSweeper } from '../src/cli/commands/processes.js'

await runSweeper(process.argv.slice(2))
