// What a test reads of a session (env.calls, env.steps, env.timeline): its log's records folded into
// calls and steps, and its events as the CLI's timeline lines.
import type { Session } from '../harness/session.js'
import { hasType } from '../log/index.js'
import { Timeline } from '../timeline/items.js'

/** A tool call of a session as `env.calls` lists it. */
export interface TestCall {
  toolCallId: string
  name: string
  status: 'requested' | 'running' | 'parked' | 'done'
  /** Its attempts and why each began: fresh, rerun (after a crash or a rerun), cut ('never' after a crash). */
  attempts: Array<'fresh' | 'resume' | 'rerun' | 'cut'>
  result?: unknown
  error?: { message: string; code?: string }
}

/** A step of a call as `env.steps` lists it. */
export interface TestStep {
  name: string
  /** Its stored value: a step.do's value, a sleep's `{ wakeAt }`, an answer, an event's payload. */
  value: unknown
  /** How many times its fn started in this process (step.do only; 0 for a value read back or a wait). */
  runs: number
}

/** A test host's count of step fn starts by idempotency key (tool/stepRuns.ts), and the counter to observe with. */
export function stepRunCounter(): { runs: Map<string, number>; count(key: string): void } {
  const runs = new Map<string, number>()
  return { runs, count: (key) => runs.set(key, (runs.get(key) ?? 0) + 1) }
}

export async function callsOf(session: Session): Promise<TestCall[]> {
  const calls = new Map<string, TestCall>()
  const add = (toolCallId: string, name: string) => calls.set(toolCallId, { toolCallId, name, status: 'requested', attempts: [] })
  for (const { record } of await session.log.read()) {
    if (hasType(record, 'harness.tool.requested')) add(record.toolCallId, record.name)
    if (hasType(record, 'harness.model.response')) for (const c of record.toolCalls) add(c.toolCallId, c.name)
    if (hasType(record, 'harness.tool.started')) calls.get(record.toolCallId)?.attempts.push(record.reason)
    if (hasType(record, 'harness.tool.result')) {
      const call = calls.get(record.toolCallId)
      if (call) Object.assign(call, record.error ? { error: record.error } : { result: record.result })
    }
  }
  for (const call of calls.values()) call.status = (await session.log.call(call.toolCallId))?.status ?? call.status
  return [...calls.values()]
}

export async function stepsOf(session: Session, toolCallId: string, runs: ReadonlyMap<string, number>): Promise<TestStep[]> {
  const steps: TestStep[] = []
  const asks = new Map<string, string>()
  const add = (name: string, value: unknown) =>
    steps.push({ name, value, runs: runs.get(`${session.sessionId}:${toolCallId}:${name}`) ?? 0 })
  const ours = <R extends { toolCallId: string }>(record: R) => record.toolCallId === toolCallId
  for (const { record } of await session.log.read()) {
    if (hasType(record, 'harness.tool.step') && ours(record)) add(record.name, record.value)
    else if (hasType(record, 'harness.tool.sleep') && ours(record)) add(record.name, { wakeAt: record.wakeAt })
    else if (hasType(record, 'harness.tool.event') && ours(record)) add(record.name, record.payload)
    else if (hasType(record, 'harness.tool.ask') && ours(record)) asks.set(record.questionId, record.name)
    else if (hasType(record, 'harness.tool.answer') && ours(record)) add(asks.get(record.questionId) ?? record.questionId, record.value)
  }
  return steps
}

export async function timelineOf(session: Session): Promise<string[]> {
  const timeline = new Timeline()
  const lines: string[] = []
  for await (const event of session.events({ follow: false }))
    for (const item of timeline.push(event)) lines.push(`${item.kind.padEnd(9)} ${item.text}`)
  return lines
}
