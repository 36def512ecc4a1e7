import { z } from 'zod'
import { InvalidAnswerError, QuestionClosedError } from '../errors/index.js'
import type { SessionLog } from '../log/index.js'
import type { Harness } from '../core/index.js'
import { wakeCall, type HarnessQueues } from '../queue/index.js'
import { encodeChecked, toJsonCopy } from '../tool/index.js'
import { assertNoSecrets } from './callerSecrets.js'
import { checkPrincipal } from './tags.js'

/** What session.answer needs of its session. */
export interface AnswerDeps {
  harness: Harness
  log: SessionLog
  queues: HarnessQueues
  checkDeployment(): Promise<void>
}

/**
 * session.answer: validated against the question's logged JSON Schema (a bad answer is refused with
 * the validation message, nothing logged), the first valid answer wins (with who answered, when
 * named), then the parked job is promoted so it runs at once.
 */
export async function answerQuestion(deps: AnswerDeps, questionId: string, value: unknown, options: { principal?: string }): Promise<void> {
  const { log, harness } = deps
  if (options.principal !== undefined) checkPrincipal(options.principal)
  const found = await log.inputs.getQuestion(questionId)
  if (!found) throw new QuestionClosedError(questionId, 'unknown')
  const { question } = found
  if (found.answer.found) throw new QuestionClosedError(questionId, 'answered')
  if (found.closed) throw new QuestionClosedError(questionId, 'closed')
  const what = `Answer to question ${questionId}`
  const copy = toJsonCopy(value, what)
  await assertNoSecrets(harness, log.sessionId, { what, encoded: encodeChecked(copy, what, harness.durability.maxValueBytes) })
  const parsed = z.fromJSONSchema(question.schema as never).safeParse(copy)
  if (!parsed.success) throw new InvalidAnswerError(questionId, z.prettifyError(parsed.error).replace(/\n\s*/g, ' '))
  await deps.checkDeployment()
  const answered = await log.actions.answerQuestion(questionId, copy, question.toolCallId, options.principal)
  if (answered.status !== 'ok') throw new QuestionClosedError(questionId, answered.status)
  // not delayed yet (the tool is still parking): it re-checks the answer after its moveToDelayed
  await wakeCall(deps.queues, log.sessionId, question.toolCallId)
}
