// POST control and GET snapshot: drive a thread and look at it, as JSON.
import { controlSchema, parse, queryId, readJson } from './bodies.js'
import type { RouteContext } from './context.js'
import { json } from './responses.js'
import { snapshot } from './threadView.js'

/**
 * `{ op: 'prompt', threadId, text, inputId? }`, `{ op: 'answer', threadId, questionId, value }` or
 * `{ op: 'abort', threadId, inputId, reason? }` or `{ op: 'resume', threadId, inputId }` → a receipt. Only a prompt may start a thread.
 * `{ op: 'event', event, key, payload?, id? }` (a webhook's machine event, no thread) → host.sendEvent's result, if `canSendEvent` admits it.
 */
export async function postControl(ctx: RouteContext): Promise<Response> {
  const command = parse(controlSchema, await readJson(ctx.request))
  if (command.op === 'event') {
    const { event, key, payload, id } = command
    const sent = await ctx.sendEvent({ event, key, payload, ...(id === undefined ? {} : { id }) })
    return json({ op: 'event', event, key, ...sent })
  }
  const session = await ctx.open(command.threadId, { existing: command.op !== 'prompt' })
  const receipt = { op: command.op, threadId: command.threadId }
  switch (command.op) {
    case 'prompt': {
      const { inputId } = await session.prompt(command.text, command.inputId ? { inputId: command.inputId } : {})
      return json({ ...receipt, status: 'accepted', inputId })
    }
    case 'answer':
      await session.answer(command.questionId, command.value)
      return json({ ...receipt, status: 'answered', questionId: command.questionId })
    case 'abort': {
      const aborted = await session.abort(command.inputId, command.reason)
      return json({ ...receipt, status: aborted ? 'aborted' : 'already_settled', inputId: command.inputId })
    }
    case 'resume': {
      const resumed = await session.resume(command.inputId)
      return json({ ...receipt, status: resumed ? 'resumed' : 'not_paused', inputId: command.inputId })
    }
  }
}

/** The thread's turns (status, answer or error), the running ones and the open questions. */
export async function getSnapshot(ctx: RouteContext): Promise<Response> {
  return json(await snapshot(await ctx.open(queryId(ctx.url, 'threadId'), { existing: true })))
}
