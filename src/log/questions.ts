import type { CodecPlace } from '../codec/index.js'
import { assertQuestionId } from './keys.js'
import type { RecordOf } from './records.js'
import { openOrMask, startsWithNul, type Sealed } from './sealedRecords.js'
import type { StepLookup } from './stepValues.js'
import type { LogStream } from './stream.js'

/** A step.ask question as logged and kept in the questions hash. */
export type Question = Omit<RecordOf<'harness.tool.ask'>, 'type'>

/** A stored question; one logged before questions had a kind is a step.ask. */
function parseQuestion(raw: string): Question {
  return { kind: 'ask', ...(JSON.parse(raw) as Question) }
}

const place = (stream: LogStream, type: string, field: string): CodecPlace => ({ sessionId: stream.sessionId, type, field })

/** A question with its first answer; `closed`: its call was cancelled, so no answer is taken any more. */
export async function getQuestion(
  stream: LogStream,
  questionId: string,
  sealed: Sealed = 'throw',
): Promise<{ question: Question; answer: StepLookup; closed: boolean } | null> {
  assertQuestionId(questionId)
  const [question, answer, closed] = await stream.command('getQuestion', () =>
    stream.redis.hmget(stream.keys.questions, questionId, `${questionId}\0answer`, `${questionId}\0closed`),
  )
  if (!question) return null
  // the answer beside its question is its record's sealed value (actions.ts answerQuestion)
  const value: unknown = answer === null ? undefined : JSON.parse(answer)
  const opened = answer === null ? undefined : await openOrMask(stream.codec, value, place(stream, 'harness.tool.answer', 'value'), sealed)
  return {
    question: await openedQuestion(stream, question, sealed),
    answer: answer === null ? { found: false } : { found: true, value: opened },
    closed: closed !== null,
  }
}

/** Open (unanswered, unexpired, not closed by a cancel) questions of a session. */
export async function openQuestions(stream: LogStream, now: number, sealed: Sealed = 'throw'): Promise<Question[]> {
  const all = await stream.command('openQuestions', () => stream.redis.hgetall(stream.keys.questions))
  const open = Object.entries(all).filter(
    ([field]) => !field.includes('\0') && !(`${field}\0answer` in all) && !(`${field}\0closed` in all),
  )
  const questions = await Promise.all(open.map(([, raw]) => openedQuestion(stream, raw, sealed)))
  return questions.filter((q) => q.expiresAt === undefined || q.expiresAt > now)
}

/** A stored question as it was asked: its message is its record's sealed one (sealedSteps.ts askArgs). */
async function openedQuestion(stream: LogStream, raw: string, sealed: Sealed): Promise<Question> {
  const question = parseQuestion(raw)
  if (!startsWithNul(question.message)) return question
  const message = await openOrMask(stream.codec, question.message, place(stream, 'harness.tool.ask', 'message'), sealed)
  return { ...question, message: String(message) }
}
