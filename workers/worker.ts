// Runs the turn and tool workers of a harness module: `worker <harness module>` (also `harness worker`).
// Env: REDIS_URL, DH_PREFIX, CONCURRENCY, SHUTDOWN_GRACE_MS (default 25000), LOG_LEVEL.
import { runWorker } from '../src/cli/commands/processes.js'

await runWorker(process.argv.slice(2))
