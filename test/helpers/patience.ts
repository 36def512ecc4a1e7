// How long the tests' liveness guards wait scales with the machine: on a 2-core machine with both
// cores busy (other builds, a busy loop beside the suite) everything takes two to three times as
// long, and a bound that only guards against a hang must not turn that into a failure. The factor
// is the load per core (at least 1, at most 6): the higher of the load when the process started and
// the load when the wait starts (a suite's load climbs as its files start worker processes), or
// DH_TEST_PATIENCE if set. No test asserts a speed with it: speeds are the bench's (docs/BENCHMARKS.md).
import os from 'node:os'

const loadFactor = () => Math.min(6, Math.max(1, 1 + os.loadavg()[0]! / Math.max(1, os.cpus().length)))
const atStart = loadFactor()

function machinePatience(): number {
  const set = Number(process.env.DH_TEST_PATIENCE)
  if (Number.isFinite(set) && set > 0) return set
  return Math.max(atStart, loadFactor())
}

/** `ms` scaled by the machine's patience: the bound of a wait that guards against a hang. */
export const patient = (ms: number): number => Math.round(ms * machinePatience())
