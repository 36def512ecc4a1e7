import { defineConfig } from 'vitest/config'
import base from './vitest.config.js'

/**
 * `npm run test:lane-off`: the core integration suites again with the local lane off
 * (DH_LOCAL_LANE=off: BullMQ's public path only, docs/harness.md), so the product is known to work
 * without it. The tests of the lane's own behaviour skip themselves in this run (`laneOff`).
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'test/integration/harness.test.ts',
      'test/integration/recovery.test.ts',
      'test/integration/turns.test.ts',
      'test/integration/startCall.test.ts',
      'test/integration/parkedJob.test.ts',
    ],
    typecheck: { enabled: false },
    env: { DH_LOCAL_LANE: 'off' },
  },
})
