// OpenTelemetry and metrics across processes: a turn starts in one worker process, parks on a
// question, and finishes in another after the first is stopped. With the OTel SDK registered (the
// in-memory exporter, test/fixtures/tracedOps.ts), the spans of both processes and the prompt's span
// form one trace; the second worker's /metrics (METRICS_PORT) counts the landed call and its model call.
import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ops } from '../fixtures/ops.js'
import type { SpanRow } from '../fixtures/tracedOps.js'
import { useWorkerProcesses } from '../helpers/hosts.js'

// each worker process serves /metrics on a free port, named in its 'worker started' log line
process.env.METRICS_PORT = '0'

describe('traces and metrics across worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'otel', harnesses: [ops], module: 'test/fixtures/tracedOps.ts', workers: 1 })
  const exporter = new InMemorySpanExporter()

  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
  })
  afterAll(() => {
    trace.disable()
    context.disable()
  })

  it("one turn's spans form one trace across two worker processes; the metrics endpoint reports the landed call", async () => {
    const session = ctx.host.open(ops, { sessionId: 'traced-1' })
    // the caller's span (a request handler's, say): the prompt carries its context into the jobs
    const { inputId } = await trace.getTracer('test').startActiveSpan('request', async (span) => {
      try {
        return await session.prompt('deploy:web')
      } finally {
        span.end()
      }
    })
    const [request] = exporter.getFinishedSpans()
    const traceId = request!.spanContext().traceId

    const first = ctx.workers[0]!
    for (;;) {
      if ((await session.questions()).length > 0) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const [question] = await session.questions()
    // the first worker stops; the answer wakes the parked call in a second one, which finishes the turn
    await first.kill('SIGTERM')
    const second = await ctx.spawn()
    const started = await second.waitFor((l) => l.msg === 'worker started')
    expect(started.metricsPort).toEqual(expect.any(Number))
    await session.answer(question!.questionId, { region: 'eu', replicas: 1, canary: true })
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed' })

    let spans: SpanRow[] = []
    // the second worker's turn span ends after the settle is logged: read until it is there
    for (;;) {
      spans = (await ctx.redis.lrange(`${ctx.prefix}:spans`, 0, -1)).map((s) => JSON.parse(s) as SpanRow)
      if (
        spans.filter((s) => s.name === 'harness.turn' && s.pid === second.proc.pid && s.attributes['harness.outcome'] === 'ok').length > 0
      )
        break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([traceId]))
    const pids = (name: string) => new Set(spans.filter((s) => s.name === name).map((s) => s.pid))
    expect(pids('harness.turn')).toEqual(new Set([first.proc.pid, second.proc.pid]))
    expect(pids('harness.tool.attempt')).toEqual(new Set([first.proc.pid, second.proc.pid]))
    expect(pids('harness.model').size).toBeGreaterThan(0)
    // the first run of the turn continues the caller's span
    const firstTurn = spans.find((s) => s.name === 'harness.turn' && s.pid === first.proc.pid)!
    expect(firstTurn.parentSpanId).toBe(request!.spanContext().spanId)
    expect(firstTurn.attributes).toMatchObject({ 'harness.session_id': 'traced-1', 'harness.input_id': inputId })

    const attempts = spans.filter((s) => s.name === 'harness.tool.attempt')
    for (const a of attempts)
      expect(a.attributes).toMatchObject({ 'harness.session_id': 'traced-1', 'harness.tool_call_id': 'call-0-0', 'harness.attempt': 1 })
    expect(attempts.find((a) => a.pid === first.proc.pid)!.attributes['harness.outcome']).toBe('parked')
    expect(attempts.find((a) => a.pid === second.proc.pid)!.attributes).toMatchObject({
      'harness.outcome': 'ok',
      'harness.call.outcome': 'result',
    })
    // steps are children of the attempt that ran them
    const steps = spans.filter((s) => s.name === 'harness.step')
    expect(steps.map((s) => [s.attributes['harness.step'], s.pid])).toEqual([
      ['plan', first.proc.pid],
      ['apply', second.proc.pid],
    ])
    for (const step of steps) expect(attempts.map((a) => a.spanId)).toContain(step.parentSpanId)

    const metrics = await (await fetch(`http://127.0.0.1:${started.metricsPort}/metrics`)).text()
    expect(metrics).toMatch(/^harness_calls_landed_total\{harness="ops",tool="deploy",outcome="result"\} 1$/m)
    expect(metrics).toMatch(/^harness_calls_started_total\{harness="ops",tool="deploy",kind="resume"\} 1$/m)
    expect(metrics).toMatch(/^harness_call_duration_seconds_count\{harness="ops",tool="deploy",outcome="result"\} 1$/m)
    expect(metrics).toMatch(/^harness_queue_jobs\{shard="\d+",queue="tools.ops",state="completed"\} 1$/m)
    expect(metrics).toMatch(/^harness_open_turns 0$/m)
    // the model call try this process made and logged, counted as the log counted it (estimated: the script reports no usage)
    expect(metrics).toMatch(/^harness_model_calls_total\{harness="ops",model="[^"]*",estimated="true"\} [1-9]\d*$/m)
    expect(metrics).toMatch(/^harness_model_tokens_total\{harness="ops",model="[^"]*",kind="input"\} [1-9]\d*$/m)
  })
})
