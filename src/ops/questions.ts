import type { OpenItem, OpenWork, Question, SessionLog } from '../log/index.js'

/**
 * Open step.ask questions across a host's sessions, oldest first, at most `limit` (`host.questions()`).
 * An expired (or vanished) question is never answerable again: it is dropped from the index as the
 * page passes it, so closed questions at the head cannot crowd open ones out of the page.
 */
export async function openQuestions(
  openWork: OpenWork,
  logFor: (sessionId: string) => SessionLog,
  limit: number,
  sealed?: 'throw' | 'mask',
): Promise<Array<Question & { sessionId: string }>> {
  const out: Array<Question & { sessionId: string }> = []
  for (let start = 0; out.length < limit;) {
    const items = await openWork.page('openQuestions', start, limit)
    if (items.length === 0) break
    const stale: OpenItem[] = []
    for (const item of items) {
      const found = await logFor(item.sessionId).inputs.getQuestion(item.id, sealed)
      if (found && !found.answer.found && (found.question.expiresAt ?? Infinity) > Date.now()) {
        if (out.length < limit) out.push({ sessionId: item.sessionId, ...found.question })
      } else stale.push(item)
    }
    await openWork.drop('openQuestions', stale)
    start += items.length - stale.length
  }
  return out
}
