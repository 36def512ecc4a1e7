import type { ToolErrorPayload } from '../log/index.js'

/** The tool error of a call whose turn was aborted while it waited (parked), or before it began. */
export function cancelledError(reason: string): ToolErrorPayload {
  return { code: 'cancelled', message: `The call was cancelled: its turn was aborted (${reason}).` }
}

/**
 * One attempt's abort: `signal` is its ctx.abortSignal; `whenAborted` sets the one callback the abort
 * also runs (bounded.ts ends the attempt with it), instead of a listener on the signal: an
 * EventTarget listener costs more to add and remove than the rest of a step (issue 24).
 */
export interface AttemptAbort {
  readonly signal: AbortSignal
  abort(reason: Error): void
  whenAborted(fn: (() => void) | undefined): void
  done(): void
}

function attemptAbort(done: () => void): AttemptAbort {
  const controller = new AbortController()
  let onAbort: (() => void) | undefined
  return {
    signal: controller.signal,
    abort: (reason) => {
      if (controller.signal.aborted) return
      controller.abort(reason)
      onAbort?.()
    },
    whenAborted: (fn) => void (onAbort = fn),
    done,
  }
}

const NOTHING_TO_FORGET = () => {}

/**
 * The abort signals of the tool calls running in this process, by turn. When a turn is aborted
 * (session.abort, from any process), the host hears the settle message and aborts the signals of that
 * turn's running calls: `ctx.abortSignal` fires inside the tool.
 */
export class CallAborts {
  private readonly byTurn = new Map<string, Set<AttemptAbort>>()

  /** The abort of one attempt of a call of the turn `<sid>|<inputId>`; `done()` forgets it (again: a no-op). */
  open(turn: string | undefined): AttemptAbort {
    if (!turn) return attemptAbort(NOTHING_TO_FORGET)
    let set = this.byTurn.get(turn)
    if (!set) this.byTurn.set(turn, (set = new Set()))
    const attempts = set
    const attempt = attemptAbort(() => {
      attempts.delete(attempt)
      if (attempts.size === 0 && this.byTurn.get(turn) === attempts) this.byTurn.delete(turn)
    })
    attempts.add(attempt)
    return attempt
  }

  abortTurn(turn: string, reason: string): void {
    for (const attempt of this.byTurn.get(turn) ?? []) attempt.abort(new Error(reason))
  }
}
