import { defineConfig } from 'vitest/config'
import SlowFirst from './test/slowFirst.js'
import { patient } from './test/helpers/patience.js'

export default defineConfig({
  test: {
    // the default output, then one plain closing line with the counts (test/summaryReporter.ts)
    reporters: ['default', './test/summaryReporter.ts'],
    include: ['test/**/*.test.ts'],
    // the Cluster-only suites run in `npm run test:cluster` (vitest.cluster.config.ts)
    exclude: ['test/cluster/**', 'node_modules/**'],
    // Chromium for the browser tests: found, or installed on Debian as root (test/helpers/chromium.ts)
    globalSetup: ['test/setup/chromium.ts'],
    // Type-level tests run through tsc alongside the runtime tests.
    typecheck: {
      enabled: true,
      include: ['test/types/**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
    },
    // Integration tests start Redis servers and BullMQ workers.
    // liveness guards, scaled by how loaded the machine is (test/helpers/patience.ts)
    // (fixed when the run starts, so never under 3 minutes: a file's worker processes load the
    // machine later in the run; a real hang only takes longer to report)
    testTimeout: Math.max(patient(60_000), 180_000),
    hookTimeout: Math.max(patient(60_000), 180_000),
    // Forks, not threads: tests spawn, signal and kill child processes.
    pool: 'forks',
    // Each file gets its own Redis (or key prefix), so files may run side by side;
    // vitest's default would be cores - 1, i.e. a single worker on a 2-core machine.
    fileParallelism: true,
    maxWorkers: 2,
    // the slowest files first, so both workers finish together (test/slowFirst.ts)
    sequence: { sequencer: SlowFirst },
  },
})
