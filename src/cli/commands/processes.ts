import { startSweepTimer } from '../../harness/sweepTimer.js'
import { stringOption, type Command } from '../command.js'
import { withHost } from '../connect.js'
import { jsonLine, print } from '../output.js'
import { flagsToEnv, msFromEnv, startProcess, workerShards } from '../processEnv.js'

/** The worker process: turn and tool workers of a harness module (workers/worker.ts, `harness worker`). */
export function runWorker(argv: string[]): Promise<void> {
  return startProcess('worker', argv, (host) => {
    const shards = workerShards()
    const sweepEveryMs = msFromEnv('SWEEP_EVERY_MS', 30_000)
    return host.startWorkers({ concurrency: Number(process.env.CONCURRENCY ?? 10), sweepEveryMs, ...(shards ? { shards } : {}) })
  })
}

/** The sweeper process: a recovery pass every SWEEP_EVERY_MS (workers/sweeper.ts, `harness sweep`). */
export function runSweeper(argv: string[]): Promise<void> {
  return startProcess('sweeper', argv, (host, logger) => {
    const timer = startSweepTimer(() => host.sweep(), msFromEnv('SWEEP_EVERY_MS', 10_000), logger)
    return { close: async () => timer.stop() }
  })
}

const PROCESS_ENV = { redis: 'REDIS_URL', prefix: 'DH_PREFIX', module: 'HARNESS_MODULE' }

export const worker: Command = {
  name: 'worker',
  args: '[harness-module]',
  summary: 'Runs the turn and tool workers of a harness module until SIGTERM/SIGINT (active jobs get SHUTDOWN_GRACE_MS).',
  details: [
    'Env: REDIS_URL, DH_PREFIX, HARNESS_MODULE, CONCURRENCY, SWEEP_EVERY_MS (its sweep and retention pass; default 30000, 0: none), SHUTDOWN_GRACE_MS, LOG_LEVEL, METRICS_PORT (serves /metrics).',
    'A module that exports `retention` (the host option) has its sessions exported, removed and trimmed by the workers.',
  ],
  options: {
    concurrency: { type: 'string', help: 'jobs at once per queue (env CONCURRENCY; default 10)' },
  },
  required: 0,
  optional: 1,
  async run({ args, values }) {
    flagsToEnv(values, { ...PROCESS_ENV, concurrency: 'CONCURRENCY' })
    await runWorker(args)
    return 'running'
  },
}

export const sweep: Command = {
  name: 'sweep',
  args: '[harness-module]',
  summary: 'Runs the recovery sweeper of a harness module until SIGTERM/SIGINT; with --once, one pass that prints its repairs.',
  details: ['Env: REDIS_URL, DH_PREFIX, HARNESS_MODULE, SWEEP_EVERY_MS (default 10000), LOG_LEVEL.'],
  options: {
    every: { type: 'string', help: 'ms between passes (env SWEEP_EVERY_MS; default 10000)' },
    once: { type: 'boolean', help: 'one pass, print the repairs as JSON lines, exit' },
  },
  required: 0,
  optional: 1,
  async run({ args, values }) {
    flagsToEnv(values, { ...PROCESS_ENV, every: 'SWEEP_EVERY_MS' })
    if (values.once) {
      const repairs = await withHost({ ...values, module: args[0] ?? stringOption(values, 'module') }, true, (host) => host.sweep())
      for (const repair of repairs) print(jsonLine(repair))
      return 0
    }
    await runSweeper(args)
    return 'running'
  },
}
