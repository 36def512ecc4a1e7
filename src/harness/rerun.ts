import { randomUUID } from 'node:crypto'
import { RerunCallError, UnknownInputError } from '../errors/index.js'
import { assertInputId, isRecord, type SessionLog } from '../log/index.js'
import type { Harness } from '../core/index.js'
import { clearFinishedTurn, enqueueTurn, type HarnessQueues } from '../queue/index.js'
import { foldTurn } from '../turn/index.js'
import { checkPrincipal } from './tags.js'

/** Options of `session.rerun`: an id that makes it idempotent, who reran, and calls to run again on purpose. */
export interface RerunOptions {
  /** The same rerunId again does nothing (default: a new id, so each call reruns once). */
  rerunId?: string
  /** Who reran (a principal's string id), recorded on the rerun record. */
  principal?: string
  /**
   * Tool call ids of the turn's last model response to run again although a rerun keeps them: a
   * `replay: 'never'` call that landed `interrupted`, `aborted`, `timeout` or `cancelled` after its
   * tool began (nobody knows whether it did its work). Name one only when you know its side effect did
   * not happen. Recorded on the rerun record. An id of no such call, or of a call that landed its
   * result (R19) or has none yet, is refused with a `RerunCallError` and nothing is rerun.
   */
  again?: readonly string[]
}

export interface RerunDeps {
  harness: Harness
  log: SessionLog
  queues: HarnessQueues
}

/**
 * session.rerun: a failed or aborted turn runs again from where it stopped. Its last model response's
 * calls that landed an error run again, except a `replay: 'never'` call whose tool began and may have
 * done its work (it keeps its error, the model sees it as before) unless named in `again`; a call that
 * landed a result is never run again (R19); kept steps stay kept. True when the turn is open again (or
 * this rerunId opened it already), false when it is not failed or aborted (still open, or completed).
 */
export async function rerunTurn(deps: RerunDeps, inputId: string, options: RerunOptions = {}): Promise<boolean> {
  assertInputId(inputId)
  const rerunId = options.rerunId ?? randomUUID()
  assertInputId(rerunId)
  if (options.principal !== undefined) checkPrincipal(options.principal)
  const { harness, log, queues } = deps
  const conversation = await log.inputs.conversation()
  const start = conversation.findIndex((e) => isRecord(e, 'harness.input') && e.record.inputId === inputId)
  const fold = foldTurn(start < 0 ? [] : conversation.slice(start), inputId)
  const calls = fold.responses.at(-1)?.toolCalls.map((c) => c.toolCallId) ?? []
  const again = againOf(options.again, calls, inputId)
  if (again.length > 0 && !(await log.inputs.getInput(inputId))?.reruns?.includes(rerunId)) {
    // checked again in the rerun's own write; here too, so a refused rerun touches no job either
    for (const id of again) {
      const result = (await log.calls.getCall(id))?.result
      if (!result?.error) throw new RerunCallError(id, result ? 'landed' : 'pending', inputId)
    }
  }
  // a finished job keeps its id taken: removed first, so the turn and its calls are added again
  await clearFinishedTurn(queues, log.sessionId, inputId, calls)
  const by = options.principal ? { principal: options.principal } : {}
  const reply = await log.actions.rerun(inputId, harness.name, { rerunId, calls, again, ...by })
  if (reply.status === 'unknown') throw new UnknownInputError(inputId)
  if (reply.status === 'landed' || reply.status === 'pending') throw new RerunCallError(reply.toolCallId, reply.status, inputId)
  if (reply.status === 'rerun' && reply.first === inputId)
    await enqueueTurn(queues, harness, log.sessionId, inputId, (await log.inputs.getInput(inputId))?.priority)
  return reply.status === 'rerun' || reply.status === 'exists'
}

/** The `again` ids, each a call of the turn's last response (`calls`), without repeats; anything else is refused. */
function againOf(again: unknown, calls: readonly string[], inputId: string): string[] {
  if (again === undefined) return []
  if (!Array.isArray(again)) throw new RerunCallError(again, 'not_in_turn', inputId)
  for (const id of again) if (typeof id !== 'string' || !calls.includes(id)) throw new RerunCallError(id, 'not_in_turn', inputId)
  return [...new Set<string>(again)]
}
