import { queryId } from './bodies.js'
import { resumeCursor, type RouteContext } from './context.js'
import { openEvents } from './events.js'
import { sseResponse } from './sse.js'

/**
 * `GET events?threadId=`: every event of the session as SSE, each with its cursor as `id:`. Resumes
 * after `Last-Event-ID` (or `?from=`); `?follow=false` ends at the last event there is.
 */
export async function getEvents(ctx: RouteContext): Promise<Response> {
  const session = await ctx.open(queryId(ctx.url, 'threadId'), { existing: true })
  const follow = ctx.url.searchParams.get('follow') !== 'false'
  const events = await openEvents(session, { from: resumeCursor(ctx, 'from'), signal: ctx.reader.signal, follow })
  return sseResponse(events, ctx.reader, { heartbeatMs: ctx.heartbeatMs, logger: ctx.logger })
}
