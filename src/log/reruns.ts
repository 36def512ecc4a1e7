import { openMember } from './formats.js'
import { SessionInputs } from './inputs.js'

/** A session's reruns (session.rerun): a failed or aborted turn opened again, its kept results kept. */
export class SessionReruns extends SessionInputs {
  /**
   * Opens a failed or aborted turn again (rerunTurn-9.lua), once per rerunId: the candidate calls that
   * landed an error are reset to run again, the others keep their results (R19). `first`: the input
   * now first in the session's line (whose turn the caller enqueues).
   */
  async rerun(
    inputId: string,
    harness: string,
    options: { rerunId: string; principal?: string; calls: readonly string[] },
  ): Promise<{ status: 'rerun'; first: string } | { status: 'exists' | 'unknown' | 'open' | 'completed' }> {
    const reply = await this.script(
      'rerunTurn',
      [
        this.keys.log,
        this.keys.inputs,
        this.keys.calls,
        this.index.openTurns,
        this.keys.line,
        this.keys.conversation,
        this.turnIndex(harness, 'open'),
        this.turnIndex(harness, 'failed'),
        this.turnIndex(harness, 'aborted'),
      ],
      [inputId, options.rerunId, Date.now(), openMember(this.sessionId, inputId), options.principal ?? '', ...options.calls],
    )
    return reply[0] === 'rerun' ? { status: 'rerun', first: reply[2] } : { status: reply[0] }
  }
}
