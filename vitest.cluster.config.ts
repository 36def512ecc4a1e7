import { defineConfig } from 'vitest/config'
import base from './vitest.config.js'

/**
 * `npm run test:cluster`: the integration suites of the log, durable tools, the harness, sleep/ask,
 * recovery and connect (events, HTTP), unchanged, against a real 3-master Redis Cluster that
 * test/cluster/globalSetup.ts starts and stops, plus the Cluster-only suite (test/cluster/).
 * DH_SHARDS=3: each shard's tag lies on another master, so every suite's sessions and queues spread
 * over all three. Suites that own a private redis-server (kill, restart, OOM, passwords: sleepRestart,
 * hardening, shutdown, rig) and the ones below that are not listed stay single-node: docs/development.md.
 * The CLI's suite is one of them: its cross-shard part is test/cluster/cli.test.ts.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'test/integration/log.test.ts',
      'test/integration/steps.test.ts',
      'test/integration/secretForms.test.ts',
      'test/integration/harness.test.ts',
      'test/integration/sleepAsk.test.ts',
      'test/integration/parkedJob.test.ts',
      'test/integration/recovery.test.ts',
      'test/integration/liveness.test.ts',
      'test/integration/events.test.ts',
      'test/integration/followers.test.ts',
      'test/integration/httpHandler.test.ts',
      'test/integration/dashboard.test.ts',
      'test/integration/machineEvents.test.ts',
      'test/integration/telemetry.test.ts',
      'test/cluster/*.test.ts',
    ],
    exclude: ['node_modules/**'],
    typecheck: { enabled: false },
    globalSetup: ['test/setup/chromium.ts', 'test/cluster/globalSetup.ts'],
    env: { DH_SHARDS: '3' },
  },
})
