// Prints one plain closing line, "vitest: N passed, N failed, N skipped", after the default reporter,
// so CI logs carry a count that any reader (and any tool) can parse without ANSI colour codes.
// A file that failed outside its tests (an import error, a type error at module level) and every
// unhandled error count as one failure each, so the line never says 0 failed for a failed run.
import type { Reporter, TestModule } from 'vitest/node'

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    const counts = { passed: 0, failed: unhandledErrors.length, skipped: 0 }
    for (const module of testModules) {
      let failedTests = 0
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') counts.passed++
        else if (state === 'failed') failedTests++
        else counts.skipped++
      }
      counts.failed += failedTests
      if (module.state() === 'failed' && failedTests === 0) counts.failed++
    }
    process.stdout.write(`\nvitest: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`)
  }
}
