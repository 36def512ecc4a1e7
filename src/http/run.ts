// POST run (AG-UI, what useChat's fetchServerSentEvents sends) and GET run (a reload: the thread as
// JSON, or a join of one running turn as SSE).
import { parse, promptText, queryId, readJson, runInputSchema } from './bodies.js'
import { resumeCursor, type RouteContext } from './context.js'
import { openEvents, runEvents, snapshotOnRetry } from './events.js'
import { applyDecisions, continueAs, endOnApprovals, type ResumeItem } from './interrupts.js'
import { HttpError, json } from './responses.js'
import { sseResponse } from './sse.js'
import { hydration } from './threadView.js'
import type { Session } from '../harness/session.js'
import type { SessionEvent } from '../events/follow.js'

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
export async function postRun(ctx: RouteContext): Promise<Response> {
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
export async function getRun(ctx: RouteContext): Promise<Response> {
  const threadId = queryId(ctx.url, 'threadId')
  if (!ctx.url.searchParams.has('runId')) return json(await hydration(await ctx.open(threadId, { existing: true }), ctx.harness))
  const runId = queryId(ctx.url, 'runId')
  const session = await ctx.open(threadId, { existing: true })
  await assertRun(session, threadId, runId)
  return streamRun(ctx, session, runId, resumeCursor(ctx, 'offset'))
}
