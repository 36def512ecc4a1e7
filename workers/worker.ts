// Runs the turn and tool workers of a harness module: `worker <harness module>`.
// Env: REDIS_URL, DH_PREFIX, CONCURRENCY, SHUTDOWN_GRACE_MS (default 25000), LOG_LEVEL.
import { startProcess } from '../src/cli/processEnv.js'

await startProcess('worker', process.argv.slice(2), (host) => host.startWorkers({ concurrency: Number(process.env.CONCURRENCY ?? 10) }))
