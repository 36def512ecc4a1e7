import type { BusyMode } from '../../core/index.js'

/**
 * The typed contracts of the scripts that move a turn between the turns indexes (keys.ts turnIndexKey):
 * a prompt opens it (and lists it in its tag indexes), a settle closes it, a rerun opens it again.
 * Part of ScriptContract (index.ts).
 */
export interface TurnScripts {
  addInput: {
    keys: [
      log: string,
      inputs: string,
      sessions: string,
      openTurns: string,
      line: string,
      conversation: string,
      openIndex: string,
      ...tagIndexes: string[],
    ]
    args: [
      inputId: string,
      text: string,
      record: string,
      now: number,
      sessionId: string,
      openMember: string,
      harness: string,
      parent: string,
      busy: BusyMode,
      context: string,
      metadata: string,
      principal: string,
    ]
    reply:
      | ['added', string, 'run' | 'queued' | 'steered', string]
      | ['busy', string]
      | ['exists', string, 'open' | 'settled', 'first' | '']
      | ['conflict']
  }
  rerunTurn: {
    keys: [
      log: string,
      inputs: string,
      calls: string,
      openTurns: string,
      line: string,
      conversation: string,
      openIndex: string,
      failedIndex: string,
      abortedIndex: string,
    ]
    args: [inputId: string, rerunId: string, now: number, openMember: string, principal: string, ...toolCallIds: string[]]
    reply: ['rerun', string, string] | ['exists'] | ['unknown'] | ['open'] | ['completed']
  }
  settleInput: {
    keys: [log: string, inputs: string, openTurns: string, line: string, conversation: string, openIndex: string, outcomeIndex: string]
    args: [
      inputId: string,
      record: string,
      openMember: string,
      publish: 'PUBLISH' | 'SPUBLISH',
      channel: string,
      messageKey: string,
      outcome: 'completed' | 'failed' | 'aborted',
      now: number,
    ]
    reply: ['settled', string, string] | ['already', string, string] | ['unknown']
  }
}
