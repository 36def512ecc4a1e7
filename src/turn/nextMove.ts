import type { RecordOf, ToolCallRecord } from '../log/index.js'
import type { TurnFold } from './fold.js'
import type { TurnView } from './view.js'

type Failure = Omit<RecordOf<'harness.input.settled'>, 'type' | 'inputId'>

/** What bounds a turn (R15), and where its job is: read by the turn job, decided here. */
export interface TurnBounds {
  /** The harness's `durability.timeoutMs`: from the input's time on. */
  timeoutMs: number | undefined
  maxAttempts: number
  maxModelCalls: number
  /** Runs of the job that stopped their worker (BullMQ's stalled count) and its failed attempts. */
  crashes: number
  attemptsMade: number
  now: number
}

/**
 * A turn's next move from its fold (an open turn's: `fold.input` set, `fold.settled` not):
 * - `fail`: a bound ran out (timeout, a crash count that reached maxAttempts, maxModelCalls);
 * - `finish`: the last response was the answer (no tool calls, no joined input unseen, no
 *   `beforeFinish` cycle after it): `beforeFinish`, then settle;
 * - `enqueue`: the last response's calls that have no result yet;
 * - `model`: call the model, within `remaining` ms (Infinity without a timeout).
 */
export type TurnMove =
  | { move: 'fail'; failure: Failure }
  | { move: 'finish'; last: RecordOf<'harness.model.response'> }
  | { move: 'enqueue'; calls: ToolCallRecord[] }
  | { move: 'model'; remaining: number }

/** The rules of a turn's next move, over its fold and view only (the turn job does the move). */
export function nextTurnMove(fold: TurnFold, view: Pick<TurnView, 'unseenJoined'>, bounds: TurnBounds): TurnMove {
  const { timeoutMs } = bounds
  const remaining = timeoutMs === undefined || !fold.input ? Infinity : fold.input.record.at + timeoutMs - bounds.now
  if (remaining <= 0) return fail('timeout', `Turn exceeded timeoutMs (${timeoutMs} ms).`)
  // the last response was the answer: settle, unless an input joined that no model call saw (busy
  // 'steer') or beforeFinish sends the model back to work (a cycle logged after it: it goes on)
  const last = fold.responses.at(-1)
  if (last && last.toolCalls.length === 0 && view.unseenJoined.length === 0 && !fold.continued) return { move: 'finish', last }
  // R15: a run that stopped its worker (a crash, a lost lock) is an attempt too; BullMQ counts it
  // on the job (its stalled counter), not in attemptsMade. A poison input ends here, not in a loop
  // (an answer already logged settles it completed, above)
  const { crashes } = bounds
  if (crashes > 0 && crashes + bounds.attemptsMade >= bounds.maxAttempts) {
    const inputId = fold.input?.record.inputId ?? ''
    return fail(
      'attempts_exhausted',
      `Turn ${inputId} stopped its worker ${crashes} times (a crash or a lost lock during the turn); maxAttempts is ${bounds.maxAttempts}.`,
    )
  }
  if (fold.pending.length > 0) return { move: 'enqueue', calls: fold.pending }
  if (fold.responses.length >= bounds.maxModelCalls)
    return fail('max_model_calls', `Turn made ${fold.responses.length} model calls, the limit (durability.maxModelCalls).`)
  return { move: 'model', remaining }
}

function fail(code: string, message: string): TurnMove {
  return { move: 'fail', failure: { outcome: 'failed', error: { code, message } } }
}
