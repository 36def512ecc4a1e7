import { openMember } from './formats.js'
import { encodeRecord, type LogStream } from './stream.js'
import { scripts } from './commands/index.js'

/**
 * What callers do to a session's turns besides prompting, each with who did it: answers (and
 * approvals) to questions, and reruns of failed or aborted turns. A part of SessionLog (sessionLog.ts)
 * over the session's stream.
 */
export class SessionActions {
  constructor(readonly stream: LogStream) {}

  /**
   * Opens a failed or aborted turn again (rerunTurn.lua), once per rerunId: the candidate calls that
   * landed an error are reset to run again, the others keep their results (R19). `first`: the input
   * now first in the session's line (whose turn the caller enqueues).
   */
  async rerun(
    inputId: string,
    harness: string,
    options: { rerunId: string; principal?: string; calls: readonly string[] },
  ): Promise<{ status: 'rerun'; first: string } | { status: 'exists' | 'unknown' | 'open' | 'completed' }> {
    const reply = await this.stream.script(scripts.rerunTurn, {
      keys: {
        ...this.stream.scriptKeys,
        openIndex: this.stream.turnIndex(harness, 'open'),
        failedIndex: this.stream.turnIndex(harness, 'failed'),
        abortedIndex: this.stream.turnIndex(harness, 'aborted'),
      },
      args: {
        inputId,
        rerunId: options.rerunId,
        now: Date.now(),
        openMember: openMember(this.stream.sessionId, inputId),
        principal: options.principal ?? '',
        toolCallIds: options.calls,
      },
    })
    return reply[0] === 'rerun' ? { status: 'rerun', first: reply[2] } : { status: reply[0] }
  }

  /** Records the first answer (the caller validated it). */
  async answerQuestion(
    questionId: string,
    value: unknown,
    toolCallId: string,
    principal?: string,
  ): Promise<{ status: 'ok' | 'unknown' | 'answered' | 'expired' | 'closed'; entryId?: string }> {
    const record = encodeRecord({ type: 'harness.tool.answer', toolCallId, questionId, value, ...(principal ? { principal } : {}) })
    const reply = await this.stream.script(scripts.answerQuestion, {
      keys: this.stream.scriptKeys,
      args: {
        questionId,
        answer: JSON.stringify(value),
        record,
        now: Date.now(),
        openMember: openMember(this.stream.sessionId, questionId),
      },
    })
    return reply[0] === 'ok' ? { status: 'ok', entryId: reply[1] } : { status: reply[0] }
  }
}
