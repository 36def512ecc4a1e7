// The flow-control scenarios (R17), shared by the single-node suite (small sizes) and the Cluster
// suite (the sizes): calls of a limited tool through worker processes against a test provider.
import { expect } from 'vitest'
import type { Harness, HarnessHost } from '../../src/index.js'
import type { TestProvider } from './provider.js'
import type { WorkerProcess } from './workerProcess.js'
import { until } from './log.js'

export interface LimitRun {
  host: HarnessHost
  provider: TestProvider
}

/** Runs `calls` calls of `callProvider` of `harness`, each in a session of its own (they spread over the shards). */
export async function runCalls(
  { host }: LimitRun,
  harness: Harness,
  label: string,
  calls: Array<{ tenant: string; n: number }>,
  tool = 'callProvider',
): Promise<unknown[]> {
  return Promise.all(
    calls.map(({ tenant, n }) =>
      host.open(harness, { sessionId: `${label}-${n}` }).runTool({ name: tool, input: { tenant, n } }, { timeoutMs: 300_000 }),
    ),
  )
}

export const callsOf = (count: number, tenant = 't') => Array.from({ length: count }, (_, n) => ({ tenant, n }))

/** The limit's state, read back from Redis: every key of every limit of `harness` at zero running and zero waiting. */
export async function expectLimitsIdle(host: HarnessHost, harness: Harness): Promise<void> {
  // a release is sent right after the job completes (not awaited): give it a moment to land
  await until(
    async () => (await host.stats()).limits.filter((l) => l.harness === harness.name).every((l) => l.running === 0 && l.waiting === 0),
    'limit state back to zero',
    10_000,
  )
  const limits = (await host.stats()).limits.filter((l) => l.harness === harness.name)
  expect(limits.length).toBeGreaterThan(0)
  for (const l of limits) expect(l).toMatchObject({ running: 0, waiting: 0 })
}

/** The small tenant's last end came before the big tenant's `lastBig`-th-from-last start. */
export function expectSmallFirst(provider: TestProvider, small: string, big: string, lastBig: number): void {
  const bigStarts = provider.starts
    .filter((s) => s.tenant === big)
    .map((s) => s.at)
    .sort((a, b) => a - b)
  const smallEnds = provider.ends.filter((s) => s.tenant === small).map((s) => s.at)
  expect(smallEnds.length).toBeGreaterThan(0)
  const lastSmallEnd = Math.max(...smallEnds)
  const beginOfLast = bigStarts[bigStarts.length - lastBig]!
  expect(lastSmallEnd).toBeLessThanOrEqual(beginOfLast)
}

/**
 * The starts the limit granted to the calls of `label`, by the limit's clock (Redis TIME): each
 * worker's "limit slot taken" line. The rate counts these; a loaded worker sends its request later
 * (the provider's own times add that lag, docs/limits.md).
 */
export function grantsOf(workers: Iterable<WorkerProcess>, label: string): number[] {
  return [...workers].flatMap((w) =>
    w.lines.filter((l) => l.msg === 'limit slot taken' && String(l.sessionId).startsWith(`${label}-`)).map((l) => Number(l.startedAt)),
  )
}

/** The most of `times` any window of `ms` holds. */
export function maxIn(times: number[], ms: number): number {
  const sorted = [...times].sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; j < sorted.length; j++) {
    while (sorted[j]! - sorted[i]! >= ms) i++
    most = Math.max(most, j - i + 1)
  }
  return most
}
