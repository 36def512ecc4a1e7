// POST run (AG-UI, what useChat's fetchServerSentEvents sends) and GET run (a reload: the thread as
// JSON, or a join of one running turn as SSE).
import { isRecord } from '../log/index.js'
import { parse, promptText, queryId, readJson, runInputSchema } from './bodies.js'
import { resumeCursor, type RouteContext } from './context.js'
import { openEvents, runEvents, snapshotOnRetry } from './events.js'
import { HttpError, json } from './responses.js'
import { sseResponse } from './sse.js'
import { hydration } from './threadView.js'
import type { Session } from '../harness/session.js'

/**
 * The SSE response of one run's events, from its start or after `from`. The events are opened (and a
 * bad cursor refused) before `start` writes anything.
 */
async function streamRun(
  ctx: RouteContext,
  session: Session,
  runId: string,
  from: string | undefined,
  start?: () => Promise<unknown>,
): Promise<Response> {
  const events = await openEvents(session, { from, signal: ctx.reader.signal })
  try {
    await start?.()
  } catch (error) {
    await events.return(undefined)
    throw error
  }
  const run = snapshotOnRetry(runEvents(events, runId, from !== undefined), async () => (await hydration(session)).messages)
  return sseResponse(run, ctx.reader, { heartbeatMs: ctx.heartbeatMs, logger: ctx.logger })
}

/**
 * One prompt, run as the request's runId, streamed from its RUN_STARTED to its RUN_FINISHED or
 * RUN_ERROR. The same runId again (a retry, or the client's reconnect with Last-Event-ID) runs once
 * and streams the same run; the same runId with another message is a 409, nothing written. The body's
 * `forwardedProps` are the turn's context (`ctx.context`).
 */
export async function postRun(ctx: RouteContext): Promise<Response> {
  const input = parse(runInputSchema, await readJson(ctx.request))
  const text = promptText(input.messages)
  const session = await ctx.open(input.threadId, { existing: false })
  // AG-UI forwardedProps become the turn's context: every tool call of it gets them as ctx.context
  const context = input.forwardedProps === undefined ? {} : { context: input.forwardedProps }
  return streamRun(ctx, session, input.runId, resumeCursor(ctx, 'from'), () => session.prompt(text, { inputId: input.runId, ...context }))
}

/**
 * `?threadId=`: the thread for a reload (messages, the running turn, open questions). `?runId=&threadId=`
 * (what `joinRun` sends, with the connection URL's threadId): that turn's events from its first one,
 * as SSE; a finished turn replays and ends.
 */
export async function getRun(ctx: RouteContext): Promise<Response> {
  const threadId = queryId(ctx.url, 'threadId')
  if (!ctx.url.searchParams.has('runId')) return json(await hydration(await ctx.open(threadId, { existing: true })))
  const runId = queryId(ctx.url, 'runId')
  const session = await ctx.open(threadId, { existing: true })
  const inputs = await session.log.read({ types: ['harness.input'] })
  if (!inputs.some((e) => isRecord(e, 'harness.input') && e.record.inputId === runId))
    throw new HttpError(404, `Unknown run ${runId} in thread ${threadId}.`, 'unknown_run')
  return streamRun(ctx, session, runId, resumeCursor(ctx, 'offset'))
}
