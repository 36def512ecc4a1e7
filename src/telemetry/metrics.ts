import { Counter, Gauge, Histogram, Registry } from 'prom-client'

/**
 * Prometheus metrics of this process (prom-client, in a registry of our own): counters and latency
 * histograms the workers update as calls and turns run, and gauges of open work and queue depth read
 * from Redis (host.stats()) at each scrape. Served at /metrics by worker processes (METRICS_PORT) and
 * by the dashboard.
 */
const registry = new Registry()

const callsStarted = new Counter({
  name: 'harness_calls_started_total',
  help: 'Tool call attempts started, by how they began (fresh, resume, rerun, cut).',
  labelNames: ['harness', 'tool', 'kind'] as const,
  registers: [registry],
})
const callsLanded = new Counter({
  name: 'harness_calls_landed_total',
  help: 'Tool calls whose result landed, by outcome (result, error).',
  labelNames: ['harness', 'tool', 'outcome'] as const,
  registers: [registry],
})
const callSeconds = new Histogram({
  name: 'harness_call_duration_seconds',
  help: 'From a tool call job first enqueued to its result landing (parks included).',
  labelNames: ['harness', 'tool', 'outcome'] as const,
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600, 86_400],
  registers: [registry],
})
const turnSeconds = new Histogram({
  name: 'harness_turn_duration_seconds',
  help: 'From a turn job enqueued (the prompt) to the job completing (the turn settled).',
  labelNames: ['harness'] as const,
  buckets: [0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600, 86_400],
  registers: [registry],
})
const limitWaitSeconds = new Histogram({
  name: 'harness_limit_wait_seconds',
  help: 'How long a call or turn waited for its limit (defineHarness limits) before it started, holding no worker slot.',
  labelNames: ['harness', 'limit'] as const,
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600],
  registers: [registry],
})
const recoveries = new Counter({
  name: 'harness_recoveries_total',
  help: "Repairs made by this process (the sweeper's, and a gone worker process's jobs moved back to wait), by reason.",
  labelNames: ['reason'] as const,
  registers: [registry],
})
const fenced = new Counter({
  name: 'harness_fenced_writes_refused_total',
  help: 'Writes of a superseded tool call attempt that the log refused (fencing).',
  registers: [registry],
})
const lockLost = new Counter({
  name: 'harness_lock_lost_attempts_total',
  help: 'Tool call attempts that found their job lock lost (a blocked or paused worker) and stopped before their next side effect.',
  registers: [registry],
})
const parked = new Gauge({ name: 'harness_parked_calls', help: 'Tool calls parked (delayed tool jobs).', registers: [registry] })
const openTurns = new Gauge({ name: 'harness_open_turns', help: 'Turns not settled (the open turns index).', registers: [registry] })
const openCalls = new Gauge({
  name: 'harness_open_calls',
  help: 'Tool calls begun and not landed (the open calls index).',
  registers: [registry],
})
const openQuestions = new Gauge({ name: 'harness_open_questions', help: 'Open questions and approvals.', registers: [registry] })
const queueJobs = new Gauge({
  name: 'harness_queue_jobs',
  help: 'Jobs per queue and state, per shard.',
  labelNames: ['shard', 'queue', 'state'] as const,
  registers: [registry],
})

/**
 * A metric's child of these three label values, made once (prom-client hashes a labels object on
 * every call); looked up by nested maps, with no array or joined key made a call.
 */
function children<T>(make: (values: [string, string, string]) => T): (a: string, b: string, c: string) => T {
  const made = new Map<string, Map<string, Map<string, T>>>()
  return (a, b, c) => {
    let byA = made.get(a)
    if (!byA) made.set(a, (byA = new Map()))
    let byB = byA.get(b)
    if (!byB) byA.set(b, (byB = new Map()))
    let child = byB.get(c)
    if (!child) byB.set(c, (child = make([a, b, c])))
    return child
  }
}
const startedOf = children((v) => callsStarted.labels(...v))
const landedOf = children((v) => ({ count: callsLanded.labels(...v), seconds: callSeconds.labels(...v) }))

export const countCallStarted = (harness: string, tool: string, kind: string) => startedOf(harness, tool, kind).inc()
export function countCallLanded(harness: string, tool: string, outcome: 'result' | 'error', sinceMs: number): void {
  const landed = landedOf(harness, tool, outcome)
  landed.count.inc()
  landed.seconds.observe(Math.max(0, Date.now() - sinceMs) / 1000)
}
export const observeTurn = (harness: string, sinceMs: number) => turnSeconds.observe({ harness }, Math.max(0, Date.now() - sinceMs) / 1000)
export const observeLimitWait = (harness: string, limit: string, waitedMs: number) =>
  limitWaitSeconds.observe({ harness, limit }, Math.max(0, waitedMs) / 1000)
export const countRecovery = (reason: string) => recoveries.inc({ reason })

const modelCalls = new Counter({
  name: 'harness_model_calls_total',
  help: 'Model call tries this process counted (docs/spend.md: failed, dropped and compaction summary tries included).',
  labelNames: ['harness', 'model', 'estimated'],
  registers: [registry],
})
const modelTokens = new Counter({
  name: 'harness_model_tokens_total',
  help: 'Tokens of the model call tries this process counted, by kind.',
  labelNames: ['harness', 'model', 'kind'],
  registers: [registry],
})
const modelCost = new Counter({
  name: 'harness_model_cost_usd_total',
  help: "USD of the model call tries this process counted: the provider's cost, else the harness's pricing.",
  labelNames: ['harness', 'model'],
  registers: [registry],
})
/** A model call try's usage as the log counted it (log/records.ts ModelUsage; declared here: telemetry sits below log/). */
export interface CountedUsage {
  model?: string
  promptTokens: number
  completionTokens: number
  cachedTokens?: number
  cacheWriteTokens?: number
  reasoningTokens?: number
  cost?: number
  estimated?: boolean
}
/** Counts a try whose usage the log counted (its write landed): Prometheus's view of the Redis totals, per process. */
export function countModelUsage(harness: string, usage: CountedUsage): void {
  const model = usage.model ?? ''
  modelCalls.inc({ harness, model, estimated: usage.estimated ? 'true' : 'false' })
  const kinds = {
    input: usage.promptTokens,
    output: usage.completionTokens,
    cached: usage.cachedTokens,
    cache_write: usage.cacheWriteTokens,
    reasoning: usage.reasoningTokens,
  }
  for (const [kind, n] of Object.entries(kinds)) if (n) modelTokens.inc({ harness, model, kind }, n)
  if (usage.cost) modelCost.inc({ harness, model }, usage.cost)
}
export const countFenced = () => fenced.inc()
export const countLockLost = () => lockLost.inc()

/**
 * What the metrics read of a host at each scrape (a HarnessHost is one). Declared here, not imported
 * from harness/: telemetry sits below the layers that emit it (docs/architecture.md, layer table).
 */
export interface StatsSource {
  stats(): Promise<{
    queues: ReadonlyArray<{ shard: number; name: string; counts: Readonly<Record<string, number>> }>
    parkedCalls: number
    openTurns: number
    openCalls: number
    openQuestions: number
  }>
}

/** The Prometheus text of this process, with the host's open work and queue depths read now. */
export async function metricsText(host: StatsSource): Promise<{ contentType: string; body: string }> {
  const stats = await host.stats()
  parked.set(stats.parkedCalls)
  openTurns.set(stats.openTurns)
  openCalls.set(stats.openCalls)
  openQuestions.set(stats.openQuestions)
  queueJobs.reset()
  for (const q of stats.queues)
    for (const [state, n] of Object.entries(q.counts)) queueJobs.set({ shard: q.shard, queue: q.name, state }, n)
  return { contentType: registry.contentType, body: await registry.metrics() }
}
