import { ToolTimeoutError } from '../errors/index.js'
import { toToolError } from '../tool/index.js'
import { ChildCancelled, type AttemptAbort } from './callAborts.js'
import { childCancelledError } from '../fanout/index.js'
import type { CallOutcome } from './runCall.js'

/**
 * Ends an attempt at its time limit or when its turn ends (aborted, timed out, from any process),
 * whichever comes first, with a tool error the model reads. JavaScript cannot stop the tool's
 * promise: its abortSignal fires, no later step starts, and once the error has landed (the call is
 * done) every write it still tries is fenced out. Its worker slot is free at once; `attempt.running`
 * says when the code ends (or one more `timeoutMs` passed: presumed stuck), for its limit slot.
 */
export function bounded(run: Promise<CallOutcome>, attempt: AttemptAbort, toolName: string, timeoutMs: number): Promise<CallOutcome> {
  // one promise, settled by whichever comes first: the tool's outcome, or the abort (a settled one ignores the other)
  return new Promise<CallOutcome>((resolve, reject) => {
    const timer = setTimeout(() => attempt.abort(new ToolTimeoutError(toolName, timeoutMs)), timeoutMs)
    const end = () => {
      clearTimeout(timer)
      attempt.whenAborted(undefined)
      attempt.done()
    }
    attempt.whenAborted(() => {
      end()
      attempt.running = settledWithin(run, timeoutMs)
      const reason: unknown = attempt.reason
      resolve({
        error:
          reason instanceof ToolTimeoutError
            ? toToolError(reason)
            : reason instanceof ChildCancelled
              ? childCancelledError(reason.why)
              : { code: 'aborted', message: `The call was stopped: its turn ended (${toToolError(reason).message}).` },
      })
    })
    run.then(
      (outcome) => (end(), resolve(outcome)),
      (error: unknown) => (end(), reject(error)),
    )
  })
}

/** True once `run` settles, false if it has not `ms` from now (the timer holds no process open). */
function settledWithin(run: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    timer.unref()
    const settled = () => (clearTimeout(timer), resolve(true))
    run.then(settled, settled)
  })
}
