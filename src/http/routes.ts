// The routes of the handler, by the last segment of the path: POST run (AG-UI: a run streamed as SSE,
// a resume of an interrupted one), GET run (a thread for a reload, or the join of one running turn as
// SSE), GET events (every event of a session as SSE), POST control and GET snapshot (JSON).
import type { Logger } from 'pino'
import type { SendEventOptions, SendEventResult } from '../harness/machineEvents.js'
import type { Session } from '../harness/session.js'
import type { Harness } from '../core/index.js'
import type { SessionEvent } from '../events/follow.js'
import { applyDecisions, continueAs, endOnApprovals, type ResumeItem } from './interrupts.js'
import { controlSchema, HttpError, json, parse, promptText, queryId, readJson, runInputSchema } from './json.js'
import { openEvents, runEvents, snapshotOnRetry, sseResponse } from './sse.js'
import { hydration, snapshot } from './threadView.js'

/** What a route gets: the request, its URL, and the sessions the principal may use (handler.ts makes it). */
export interface RouteContext {
  request: Request
  url: URL
  logger: Logger
  heartbeatMs: number
  /** The harness the handler serves (its tools: which calls need approval). */
  harness: Harness
  /**
   * The thread's session, if the principal may use it (else 403). `existing`: a thread with nothing
   * in its log is a 404 (every route but the ones that prompt).
   */
  open(threadId: string, options: { existing: boolean }): Promise<Session>
  /** Aborts when the client goes away (request.signal) or the response body is cancelled. */
  reader: AbortController
  /** host.sendEvent, if the principal may send this event (`canSendEvent`; without one every event is refused with 403). */
  sendEvent(event: SendEventOptions): Promise<SendEventResult>
  /** Who sends the request, as the log records it (`principalId` of authorize's principal): spread into prompt, answer, abort and rerun. */
  by: { principal?: string }
}

type Route = (ctx: RouteContext) => Promise<Response>

// by the last segment of the path: the handler answers wherever it is mounted (see docs/connect.md)
export const ROUTES: Record<string, Partial<Record<string, Route>>> = {
  run: { POST: postRun, GET: getRun },
  events: { GET: getEvents },
  control: { POST: postControl },
  snapshot: { GET: getSnapshot },
}

/**
 * The cursor a reconnecting client sends (Last-Event-ID), else the one in the query. An empty one is
 * none (a client that has no event yet may send the header empty), as is `-1` in the query.
 */
function resumeCursor(ctx: RouteContext, query: string): string | undefined {
  const header = ctx.request.headers.get('Last-Event-ID')
  if (header) return header
  const fromQuery = ctx.url.searchParams.get(query)
  return fromQuery && fromQuery !== '-1' ? fromQuery : undefined
}

/**
 * The SSE response of one run's events, from its input's record or after `from`, ended by an
 * interrupt when its calls wait on approvals. A `from` is checked (a bad cursor refused) before
 * `start` writes anything; without one, reading starts at the run's input, after `start` wrote it, so
 * it costs what the run holds, not what the session does. `as`: the events of the run `runId` streamed
 * as the client's run `as.runId` (a resume).
 */
async function streamRun(
  ctx: RouteContext,
  session: Session,
  runId: string,
  from: string | undefined,
  options: { start?: () => Promise<unknown>; as?: { runId: string; resumed: string[] } } = {},
): Promise<Response> {
  const open = () => openEvents(session, { from, fromInput: runId, signal: ctx.reader.signal })
  let events: AsyncGenerator<SessionEvent>
  if (from === undefined) {
    await options.start?.()
    events = await open()
  } else {
    events = await open()
    try {
      await options.start?.()
    } catch (error) {
      await events.return(undefined)
      throw error
    }
  }
  const inside = from !== undefined
  const own = runEvents(events, runId, inside)
  const { as } = options
  const shown = as ? continueAs(own, { threadId: session.sessionId, ...as, inside }) : own
  const run = endOnApprovals(shown, { session, harness: ctx.harness, runId: as?.runId ?? runId })
  const sse = snapshotOnRetry(run, async () => (await hydration(session, ctx.harness)).messages)
  return sseResponse(sse, ctx.reader, { heartbeatMs: ctx.heartbeatMs, logger: ctx.logger })
}

/**
 * One prompt, run as the request's runId, streamed from its RUN_STARTED to its RUN_FINISHED or
 * RUN_ERROR (or to an interrupt: its calls wait on approvals). The same runId again (a retry, or the
 * client's reconnect with Last-Event-ID) runs once and streams the same run; the same runId with
 * another message is a 409, nothing written. The body's `forwardedProps` are the turn's context
 * (`ctx.context`). With `resume` and `parentRunId`: the client's decisions on an interrupted run,
 * whose turn then streams on as this runId.
 */
async function postRun(ctx: RouteContext): Promise<Response> {
  const input = parse(runInputSchema, await readJson(ctx.request))
  if (input.resume?.length) return resumeRun(ctx, input.threadId, input.runId, input.parentRunId, input.resume)
  const text = promptText(input.messages)
  const session = await ctx.open(input.threadId, { existing: false })
  // AG-UI forwardedProps become the turn's context: every tool call of it gets them as ctx.context
  const context = input.forwardedProps === undefined ? {} : { context: input.forwardedProps }
  return streamRun(ctx, session, input.runId, resumeCursor(ctx, 'from'), {
    start: () => session.prompt(text, { inputId: input.runId, ...context, ...ctx.by }),
  })
}

async function resumeRun(ctx: RouteContext, threadId: string, runId: string, parentRunId: string | undefined, resume: ResumeItem[]) {
  if (!parentRunId) throw new HttpError(400, 'A resume needs parentRunId: the run that was interrupted.', 'bad_request')
  const session = await ctx.open(threadId, { existing: true })
  await assertRun(session, threadId, parentRunId)
  return streamRun(ctx, session, parentRunId, resumeCursor(ctx, 'from'), {
    start: () => applyDecisions(session, resume, ctx.by),
    as: { runId, resumed: resume.map((r) => r.interruptId) },
  })
}

async function assertRun(session: Session, threadId: string, runId: string): Promise<void> {
  if (!(await session.log.input(runId))) throw new HttpError(404, `Unknown run ${runId} in thread ${threadId}.`, 'unknown_run')
}

/**
 * `?threadId=`: the thread for a reload (messages, the running turn, open questions). `?runId=&threadId=`
 * (what `joinRun` sends, with the connection URL's threadId): that turn's events from its first one,
 * as SSE; a finished turn replays and ends.
 */
async function getRun(ctx: RouteContext): Promise<Response> {
  const threadId = queryId(ctx.url, 'threadId')
  if (!ctx.url.searchParams.has('runId')) return json(await hydration(await ctx.open(threadId, { existing: true }), ctx.harness))
  const runId = queryId(ctx.url, 'runId')
  const session = await ctx.open(threadId, { existing: true })
  await assertRun(session, threadId, runId)
  return streamRun(ctx, session, runId, resumeCursor(ctx, 'offset'))
}

/**
 * `{ op: 'prompt', threadId, text, inputId? }`, `{ op: 'answer', threadId, questionId, value }` or
 * `{ op: 'abort', threadId, inputId, reason? }` or `{ op: 'resume', threadId, inputId }` → a receipt. Only a prompt may start a thread.
 * `{ op: 'event', event, key, payload?, id?, sessionId? }` (a webhook's machine event; `sessionId`: for that thread's scoped waits) → host.sendEvent's result, if `canSendEvent` admits it.
 * `{ op: 'abort', threadId, inputId, reason? }`, `{ op: 'resume', threadId, inputId }` or `{ op: 'rerun', threadId, inputId,
 * rerunId?, again? }` (a failed or aborted turn runs again), `{ op: 'compact', threadId }` (session.compact),
 * `{ op: 'reset', threadId, note? }` (session.reset) → a receipt;
 * prompts, answers, aborts, reruns, compactions and resets record who sent them (`principalId` of authorize's principal).
 * Only a prompt may start a thread.
 */
async function postControl(ctx: RouteContext): Promise<Response> {
  const command = parse(controlSchema, await readJson(ctx.request))
  if (command.op === 'event') {
    const { event, key, payload, id, sessionId } = command
    const sent = await ctx.sendEvent({
      event,
      key,
      payload,
      ...(id === undefined ? {} : { id }),
      ...(sessionId === undefined ? {} : { sessionId }),
    })
    return json({ op: 'event', event, key, ...(sessionId === undefined ? {} : { sessionId }), ...sent })
  }
  const session = await ctx.open(command.threadId, { existing: command.op !== 'prompt' })
  const receipt = { op: command.op, threadId: command.threadId }
  switch (command.op) {
    case 'prompt': {
      const { inputId: id, metadata } = command
      const { inputId } = await session.prompt(command.text, {
        ...(id ? { inputId: id } : {}),
        ...(metadata ? { metadata } : {}),
        ...ctx.by,
      })
      return json({ ...receipt, status: 'accepted', inputId })
    }
    case 'answer':
      await session.answer(command.questionId, command.value, ctx.by)
      return json({ ...receipt, status: 'answered', questionId: command.questionId })
    case 'abort': {
      const aborted = await session.abort(command.inputId, command.reason, ctx.by)
      return json({ ...receipt, status: aborted ? 'aborted' : 'already_settled', inputId: command.inputId })
    }
    case 'resume': {
      const resumed = await session.resume(command.inputId)
      return json({ ...receipt, status: resumed ? 'resumed' : 'not_paused', inputId: command.inputId })
    }
    case 'rerun': {
      const { rerunId, again } = command
      const rerun = await session.rerun(command.inputId, { ...(rerunId ? { rerunId } : {}), ...(again ? { again } : {}), ...ctx.by })
      return json({ ...receipt, status: rerun ? 'rerun' : 'not_rerunnable', inputId: command.inputId })
    }
    case 'compact': {
      // the harness's compaction, now (docs/compaction.md); the record names who asked
      const compacted = await session.compact(ctx.by)
      return json({ ...receipt, status: compacted.compacted ? 'compacted' : 'nothing_to_compact', ...compacted })
    }
    case 'reset': {
      // the model's context starts over from the note (docs/compaction.md, "Reset"); the transcript stays
      const done = await session.reset(command.note, ctx.by)
      return json({ ...receipt, status: 'reset', ...done })
    }
  }
}

/** The thread's turns (status, answer or error), the running ones and the open questions. */
async function getSnapshot(ctx: RouteContext): Promise<Response> {
  return json(await snapshot(await ctx.open(queryId(ctx.url, 'threadId'), { existing: true })))
}

/**
 * `GET events?threadId=`: every event of the session as SSE, each with its cursor as `id:`. Resumes
 * after `Last-Event-ID` (or `?from=`); `?follow=false` ends at the last event there is.
 */
async function getEvents(ctx: RouteContext): Promise<Response> {
  const session = await ctx.open(queryId(ctx.url, 'threadId'), { existing: true })
  const follow = ctx.url.searchParams.get('follow') !== 'false'
  const events = await openEvents(session, { from: resumeCursor(ctx, 'from'), signal: ctx.reader.signal, follow })
  return sseResponse(events, ctx.reader, { heartbeatMs: ctx.heartbeatMs, logger: ctx.logger })
}
