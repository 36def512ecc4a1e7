// The client's answers to the questions a server sent (elicitation/create): a JSON-RPC response whose
// id names the task and the question. Any process takes it, so the answer never depends on which
// server asked (docs/mcp.md "Questions").
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from 'pino'
import { openQuestionsOf, type TaskScope } from './tasks.js'
import { answerOf, isObject } from './results.js'
import { principalId } from '../harness/tags.js'
import { parseElicitationId } from './taskIds.js'

/** A JSON-RPC response (no method; a result or an error) to one of our elicitation requests. */
function isOurAnswer(message: unknown): message is Record<string, unknown> & { id: string } {
  return (
    isObject(message) &&
    !('method' in message) &&
    ('result' in message || 'error' in message) &&
    parseElicitationId(message.id) !== undefined
  )
}

/**
 * Takes the answers in a POST's body (one message or a batch) and returns what is left for the MCP
 * server, or undefined when nothing is. An accepted form answers the question (its schema checks it
 * as any answer is checked); a declined or cancelled one denies an approval and cancels the call of a
 * step.ask (its tool gets the `cancelled` error). An answer to a question that is closed, or that is
 * not the principal's, changes nothing.
 */
export async function answerElicitations(scope: TaskScope, principal: object, body: unknown, logger: Logger): Promise<unknown> {
  const messages = Array.isArray(body) ? body : [body]
  const rest = messages.filter((m) => !isOurAnswer(m))
  for (const message of messages.filter(isOurAnswer)) {
    try {
      await answerOne(scope, principal, message)
    } catch (error) {
      // the question stays open: the next tasks/result asks it again
      logger.warn({ err: error, sessionId: scope.session.sessionId }, 'MCP answer refused')
    }
  }
  if (rest.length === 0) return undefined
  return Array.isArray(body) ? rest : rest[0]
}

async function answerOne(scope: TaskScope, principal: object, message: Record<string, unknown>): Promise<void> {
  const { taskId, questionId } = parseElicitationId(message.id)!
  const question = (await openQuestionsOf(scope, taskId)).find((q) => q.questionId === questionId)
  if (!question) return
  const by = principalId(principal)
  const options = by === undefined ? {} : { principal: by }
  const answer = ElicitResultSchema.safeParse(message.result)
  if (answer.success && answer.data.action === 'accept') {
    await scope.session.answer(questionId, answerOf(question.schema, answer.data.content), options)
    return
  }
  const why = answer.success ? `The MCP client chose "${answer.data.action}".` : 'The MCP client could not answer.'
  if (question.kind === 'approval') await scope.session.answer(questionId, { approved: false, reason: why }, options)
  else await scope.session.cancelCall(question.toolCallId, why)
}
