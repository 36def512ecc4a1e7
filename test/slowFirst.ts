// Vitest's file order: the slowest files first, so the two workers end together. Without it a fresh
// clone (no results cache) runs the larger files first, and a long file that is short in bytes (the
// CLI's) started late and ran on alone at the end. The rest keep vitest's own order (the cache's
// durations, else size). The list is the slowest files of `npm test` on 2 cores, slowest first (of
// both runs: the main one and the Cluster's).
import { BaseSequencer, type TestSpecification } from 'vitest/node'

const SLOWEST = [
  'test/integration/cli.test.ts',
  'test/integration/package.test.ts',
  'test/integration/conversation.test.ts',
  'test/integration/incidents.test.ts',
  'test/integration/harness.test.ts',
  'test/integration/schedules.test.ts',
  'test/integration/shutdown.test.ts',
  'test/integration/sleepRestart.test.ts',
  'test/integration/turns.test.ts',
  'test/cluster/limits.test.ts',
  'test/integration/recovery.test.ts',
  'test/unit/lintLayers.test.ts',
  'test/integration/sequentialTools.test.ts',
  'test/integration/dashboardSecurity.test.ts',
  'test/integration/dashboard.test.ts',
  'test/integration/modelErrors.test.ts',
  'test/integration/finishCycles.test.ts',
  'test/integration/exampleChat.test.ts',
  'test/integration/machineEvents.test.ts',
]

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const at = SLOWEST.findIndex((path) => spec.moduleId.endsWith(`/${path}`))
      return at === -1 ? SLOWEST.length : at
    }
    // Array.prototype.sort is stable: files off the list keep the base order among themselves
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}
