// TanStack's approval interrupts over durable approvals. A run whose calls all wait on approvals ends
// its POST-run stream with RUN_FINISHED { outcome: interrupt } (the turn itself keeps waiting, durably);
// the client's decision (`addToolApprovalResponse`, an interrupt's `resolveInterrupt`) comes back as a
// POST run with `resume`, which answers the approval questions and streams the rest of the turn as
// the client's new run. See docs/connect.md.
import { EventType, normalizeApprovalSchema, hashSchemaInput, withInterruptBinding, type StreamChunk } from '@tanstack/ai'
import { z } from 'zod'
import { needsApproval } from '../call/approval.js'
import { QuestionClosedError } from '../errors/index.js'
import { toolOf, type Harness } from '../core/index.js'
import type { Question } from '../log/index.js'
import type { SessionEvent } from '../events/follow.js'
import type { Session } from '../harness/session.js'
import { HttpError } from './json.js'

type Interrupt = Extract<StreamChunk, { type: 'RUN_FINISHED' }>['outcome'] extends infer O
  ? O extends { type: 'interrupt'; interrupts: Array<infer I> }
    ? I
    : never
  : never

/** A resume item of AG-UI's RunAgentInput, as TanStack's client sends it. */
export interface ResumeItem {
  interruptId: string
  status: 'resolved' | 'cancelled'
  payload?: unknown
}

/**
 * The interrupt descriptor of an open approval question. Its id is the question id. It carries both
 * forms TanStack's client resumes: the tool-approval binding (a client that registers the tool's
 * definition gets `resolveInterrupt(true | false)`) and the approval metadata (`kind`, `toolName`,
 * `input`) that `addToolApprovalResponse` finds without it.
 */
export function approvalInterrupt(
  harness: Harness,
  question: Question,
  call: { name: string; input: unknown },
  interruptedRunId: string,
): Interrupt {
  const tool = toolOf(harness, call.name)
  const schema = normalizeApprovalSchema(undefined, tool?.inputSchema)
  const expires = question.expiresAt !== undefined ? { expiresAt: new Date(question.expiresAt).toISOString() } : {}
  const descriptor: Interrupt = {
    id: question.questionId,
    reason: 'approval_required',
    message: question.message,
    toolCallId: question.toolCallId,
    responseSchema: schema.responseSchema,
    ...expires,
    metadata: { kind: 'approval', toolName: call.name, input: call.input },
  }
  return withInterruptBinding(descriptor, {
    v: 1,
    kind: 'tool-approval',
    interruptId: question.questionId,
    toolName: call.name,
    toolCallId: question.toolCallId,
    originalArgs: call.input,
    inputSchemaHash: hashSchemaInput(tool?.inputSchema),
    approvalSchemaHash: schema.approvalSchemaHash,
    responseSchemaHash: schema.responseSchemaHash,
    ...expires,
    interruptedRunId,
    generation: 0,
  })
}

/**
 * Passes a run's events through, and ends them with RUN_FINISHED { outcome: interrupt } once every
 * call of the run that needs approval and has no result waits on its approval question (the ones
 * still open when it looks: a decision made elsewhere meanwhile is not asked again). The turn goes
 * on waiting; only this stream ends, as TanStack's chat() ends a run that needs approval.
 */
export async function* endOnApprovals(
  events: AsyncIterable<SessionEvent>,
  run: { session: Session; harness: Harness; runId: string },
): AsyncGenerator<SessionEvent> {
  const waiting = new Map<string, { name: string; input: unknown }>()
  const asked = new Set<string>()
  for await (const entry of events) {
    yield entry
    const { event } = entry
    if (event.type === 'TOOL_CALL_START') {
      if (needsApproval(toolOf(run.harness, event.toolCallName))) waiting.set(event.toolCallId, { name: event.toolCallName, input: {} })
    } else if (event.type === 'TOOL_CALL_END') {
      const call = waiting.get(event.toolCallId)
      if (call) call.input = event.input ?? {}
    } else if (event.type === 'TOOL_CALL_RESULT') {
      waiting.delete(event.toolCallId)
    } else if (isApprovalAsk(event) && waiting.has(event.value.toolCallId)) {
      asked.add(event.value.toolCallId)
      if (![...waiting.keys()].every((id) => asked.has(id))) continue
      // in the order the model called them
      const questions = (await run.session.questions()).filter((q) => q.kind === 'approval')
      const open = [...waiting].flatMap(([id, call]) => questions.filter((q) => q.toolCallId === id).map((q) => ({ q, call })))
      if (open.length === 0) continue
      const interrupts = open.map(({ q, call }) => approvalInterrupt(run.harness, q, call, run.runId))
      // no cursor: the client's resumable stream drops an event whose id it has seen (the ask's)
      yield {
        cursor: '',
        event: {
          type: EventType.RUN_FINISHED,
          threadId: run.session.sessionId,
          runId: run.runId,
          outcome: { type: 'interrupt', interrupts },
        },
      }
      return
    }
  }
}

function isApprovalAsk(event: StreamChunk): event is StreamChunk & { value: Question } {
  if (event.type !== 'CUSTOM' || event.name !== 'harness.tool.ask') return false
  const { value } = event
  return (
    typeof value === 'object' &&
    value !== null &&
    'kind' in value &&
    value.kind === 'approval' &&
    'toolCallId' in value &&
    typeof value.toolCallId === 'string'
  )
}

/**
 * Applies the client's decisions: each resumed interrupt is an approval question, answered with
 * `{ approved, reason? }` (a cancelled interrupt denies). The same resume again (a retry) changes
 * nothing: the first decision is kept. Editing a call's input on approval is refused.
 */
export async function applyDecisions(session: Session, items: ResumeItem[], by: { principal?: string } = {}): Promise<void> {
  const open = await session.questions()
  for (const item of items) {
    if (open.find((q) => q.questionId === item.interruptId)?.kind === 'ask')
      throw new HttpError(400, `Interrupt ${item.interruptId} is a step.ask question: answer it with POST control.`, 'bad_request')
    try {
      await session.answer(item.interruptId, decisionOf(item), by)
    } catch (error) {
      // decided already (a retried resume, or another process), or its call ended: the log says how
      if (error instanceof QuestionClosedError && error.code !== 'question_unknown') continue
      throw error
    }
  }
}

/** What a resolved interrupt's payload may carry, each field checked below; anything else of it is ignored. */
const decisionPayload = z
  .object({
    approved: z.unknown(),
    editedArgs: z.unknown(),
    reason: z.unknown(),
    payload: z.object({ reason: z.unknown() }).partial().optional().catch(undefined),
  })
  .partial()

function decisionOf(item: ResumeItem): { approved: boolean; reason?: string } {
  if (item.status === 'cancelled') return { approved: false, reason: 'cancelled' }
  const parsed = decisionPayload.safeParse(item.payload ?? {})
  const payload = parsed.success ? parsed.data : {}
  if (typeof payload.approved !== 'boolean')
    throw new HttpError(400, `Interrupt ${item.interruptId}: the payload must be { approved: boolean }.`, 'bad_request')
  if (payload.editedArgs !== undefined)
    throw new HttpError(400, `Interrupt ${item.interruptId}: editing a call's input on approval is not supported.`, 'bad_request')
  const reason =
    typeof payload.reason === 'string' ? payload.reason : typeof payload.payload?.reason === 'string' ? payload.payload.reason : undefined
  return { approved: payload.approved, ...(reason ? { reason } : {}) }
}

/**
 * The interrupted run's events as the client's new run: from right after the resumed questions (the
 * client has everything before them) to the turn's end, under `runId`. `inside`: a reconnect after
 * one of this stream's cursors, which starts where it left off.
 */
export async function* continueAs(
  events: AsyncIterable<SessionEvent>,
  run: { threadId: string; runId: string; resumed: string[]; inside: boolean },
): AsyncGenerator<SessionEvent> {
  const before = new Set(run.inside ? [] : run.resumed)
  let started = run.inside
  for await (const entry of events) {
    const { event } = entry
    const ends = event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR'
    if (!started) {
      started = true
      // no cursor: it is not an event of the log to resume after
      yield { cursor: '', event: { type: EventType.RUN_STARTED, threadId: run.threadId, runId: run.runId } }
    }
    if (before.size > 0 && !ends) {
      if (isApprovalAsk(event)) before.delete(event.value.questionId)
      continue
    }
    if (event.type === 'RUN_STARTED') continue
    yield ends ? { ...entry, event: { ...event, runId: run.runId } } : entry
  }
}
