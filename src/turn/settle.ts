import type { Harness } from '../core/index.js'
import type { ModelUsage, RecordOf, SessionLog } from '../log/index.js'
import { enqueueTurn, type HarnessQueues } from '../queue/index.js'
import { terminalHooks } from './middleware.js'

/**
 * Settles a turn, the inputs that joined it (busy 'steer') with the same outcome, and starts the
 * turn next in the session's line (busy 'queue'). Every settler goes through here: the turn itself,
 * `session.abort`, the sweeper. A crash after the settle leaves the next turn to the sweeper.
 * The settler that wins runs the middleware's terminal hook (onFinish / onError / onAbort), after the
 * next turn is enqueued: at most once a turn (a crash right after the settle skips it). `last`: the
 * turn's last model response, when the settler has it (the turn does), so onFinish need not read it.
 */
export async function settleTurn(
  log: SessionLog,
  queues: HarnessQueues,
  harness: Harness,
  record: RecordOf<'harness.input.settled'>,
  last?: { usage?: ModelUsage },
): Promise<'settled' | 'already' | 'unknown'> {
  const { status, next } = await log.inputs.settle(record, harness.name)
  const input = status === 'settled' ? await log.inputs.getInput(record.inputId) : null
  for (const inputId of input?.steered ?? []) await log.inputs.settle({ ...record, inputId }, harness.name)
  // at the priority its prompt gave (kept on the input), else the harness's
  if (next) await enqueueTurn(queues, harness, log.sessionId, next, (await log.inputs.getInput(next))?.priority)
  if (input) await terminalHooks(harness, log, input, record, last)
  return status
}
