import type { ToolErrorPayload } from '../log/index.js'

/** The tool error of a call whose turn was aborted while it waited (parked), or before it began. */
export function cancelledError(reason: string): ToolErrorPayload {
  return { code: 'cancelled', message: `The call was cancelled: its turn was aborted (${reason}).` }
}

/**
 * The abort signals of the tool calls running in this process, by turn. When a turn is aborted
 * (session.abort, from any process), the host hears the settle message and aborts the signals of that
 * turn's running calls: `ctx.abortSignal` fires inside the tool.
 */
export class CallAborts {
  private readonly byTurn = new Map<string, Set<AbortController>>()

  /** A controller for one attempt of a call of the turn `<sid>|<inputId>`; `done()` forgets it (again: a no-op). */
  open(turn: string | undefined): { signal: AbortSignal; abort(reason: Error): void; done(): void } {
    const controller = new AbortController()
    const abort = (reason: Error) => controller.abort(reason)
    if (!turn) return { signal: controller.signal, abort, done: () => {} }
    let set = this.byTurn.get(turn)
    if (!set) this.byTurn.set(turn, (set = new Set()))
    set.add(controller)
    return {
      signal: controller.signal,
      abort,
      done: () => {
        set.delete(controller)
        if (set.size === 0 && this.byTurn.get(turn) === set) this.byTurn.delete(turn)
      },
    }
  }

  abortTurn(turn: string, reason: string): void {
    for (const controller of this.byTurn.get(turn) ?? []) controller.abort(new Error(reason))
  }
}
