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
   * landed an error are reset to run again, the others keep their results (R19), and so does a
   * `never` call whose tool may have done its work, unless named in `again` (candidates too). `first`:
   * the input now first in the session's line (whose turn the caller enqueues). 'landed' / 'pending':
   * a call named in `again` landed a result / has none yet, and nothing was written.
   */
  async rerun(
    inputId: string,
    harness: string,
    options: { rerunId: string; principal?: string; calls: readonly string[]; again?: readonly string[] },
  ): Promise<
    | { status: 'rerun'; first: string }
    | { status: 'exists' | 'unknown' | 'open' | 'completed' }
    | { status: 'landed' | 'pending'; toolCallId: string }
  > {
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
        again: JSON.stringify(options.again ?? []),
        toolCallIds: options.calls,
      },
    })
    if (reply[0] === 'rerun') return { status: 'rerun', first: reply[2] }
    if (reply[0] === 'landed' || reply[0] === 'pending') return { status: reply[0], toolCallId: reply[1] }
    return { status: reply[0] }
  }

  /** Records the first answer (the caller validated it). */
  async answerQuestion(
    questionId: string,
    value: unknown,
    toolCallId: string,
    principal?: string,
  ): Promise<{ status: 'ok' | 'unknown' | 'answered' | 'expired' | 'closed'; entryId?: string }> {
    // the answer beside its question is the record's value, sealed once for both (docs/encryption.md)
    const sealed = await this.stream.sealed({
      type: 'harness.tool.answer',
      toolCallId,
      questionId,
      value,
      ...(principal ? { principal } : {}),
    })
    const record = encodeRecord(sealed)
    const reply = await this.stream.script(scripts.answerQuestion, {
      keys: this.stream.scriptKeys,
      args: {
        questionId,
        answer: JSON.stringify(sealed.value),
        record,
        now: Date.now(),
        openMember: openMember(this.stream.sessionId, questionId),
      },
    })
    return reply[0] === 'ok' ? { status: 'ok', entryId: reply[1] } : { status: reply[0] }
  }
}
