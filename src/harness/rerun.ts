import { randomUUID } from 'node:crypto'
import { UnknownInputError } from '../errors/index.js'
import { assertInputId, isRecord, type SessionLog } from '../log/index.js'
import type { Harness } from '../core/index.js'
import { clearFinishedTurn, enqueueTurn, type HarnessQueues } from '../queue/index.js'
import { foldTurn } from '../turn/index.js'
import { checkPrincipal } from './tags.js'

/** Options of `session.rerun`: an id that makes it idempotent, and who reran. */
export interface RerunOptions {
  /** The same rerunId again does nothing (default: a new id, so each call reruns once). */
  rerunId?: string
  /** Who reran (a principal's string id), recorded on the rerun record. */
  principal?: string
}

export interface RerunDeps {
  harness: Harness
  log: SessionLog
  queues: HarnessQueues
}

/**
 * session.rerun: a failed or aborted turn runs again from where it stopped. Its last model response's
 * calls that landed an error run again; a call that landed a result is never run again (R19); its
 * kept steps stay kept. True when the turn is open again (or this rerunId opened it already), false
 * when it is not failed or aborted (still open, or completed).
 */
export async function rerunTurn(deps: RerunDeps, inputId: string, options: RerunOptions = {}): Promise<boolean> {
  assertInputId(inputId)
  const rerunId = options.rerunId ?? randomUUID()
  assertInputId(rerunId)
  if (options.principal !== undefined) checkPrincipal(options.principal)
  const { harness, log, queues } = deps
  const conversation = await log.conversation()
  const start = conversation.findIndex((e) => isRecord(e, 'harness.input') && e.record.inputId === inputId)
  const fold = foldTurn(start < 0 ? [] : conversation.slice(start), inputId)
  const calls = fold.responses.at(-1)?.toolCalls.map((c) => c.toolCallId) ?? []
  // a finished job keeps its id taken: removed first, so the turn and its calls are added again
  await clearFinishedTurn(queues, log.sessionId, inputId, calls)
  const reply = await log.rerun(inputId, harness.name, { rerunId, calls, ...(options.principal ? { principal: options.principal } : {}) })
  if (reply.status === 'unknown') throw new UnknownInputError(inputId)
  if (reply.status === 'rerun' && reply.first === inputId)
    await enqueueTurn(queues, harness, log.sessionId, inputId, (await log.getInput(inputId))?.priority)
  return reply.status === 'rerun' || reply.status === 'exists'
}
