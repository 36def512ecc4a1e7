import type { Fence, SessionLog, ToolErrorPayload } from '../log/index.js'
import type { LineLogger } from '../logger.js'
import type { Park } from '../tool/index.js'

/** The tool error of a call whose turn was aborted while it waited (parked), or before it began. */
export function cancelledError(reason: string): ToolErrorPayload {
  return { code: 'cancelled', message: `The call was cancelled: its turn was aborted (${reason}).` }
}

/**
 * Cancels a parked call of an aborted turn: its `cancelled` tool error lands and its open questions
 * close in one write, fenced on the parked epoch `fence` names (cancelCall.lua). The host's cancel
 * (harness/cancel.ts) and a worker whose call parked after the abort (toolJob.ts) both end a call so.
 */
export async function cancelParkedCall(log: SessionLog, fence: Fence, name: string, reason: string) {
  const questions = (await log.inputs.openQuestions()).filter((q) => q.toolCallId === fence.toolCallId).map((q) => q.questionId)
  return log.calls.cancelCall(fence, name, questions, cancelledError(reason))
}

/** The abort reason of a settled turn, if it settled as aborted. */
export async function abortedTurn(log: SessionLog, inputId: string): Promise<string | undefined> {
  const settled = await log.inputs.getSettled(inputId)
  return settled?.outcome === 'aborted' ? (settled.error?.message ?? 'Aborted.') : undefined
}

/**
 * Cancels a call whose turn was aborted while it parked: the abort's cancel (cancel.ts) found it still
 * running and left it to its worker, so the worker cancels it here as the abort would have, its open
 * questions closed in the same fenced write (cancelCall); true when it did (the job is then woken and
 * finds the call done). An agent call is left to wake at its re-check: its child turn is aborted by
 * the host's cancel, which a worker does not run.
 */
export async function cancelledByAbort(
  log: SessionLog,
  call: { name: string; inputId?: string | undefined },
  fence: Fence,
  p: Park,
  logger: LineLogger,
): Promise<boolean> {
  if (!call.inputId || p.kind === 'agent') return false
  const reason = await abortedTurn(log, call.inputId)
  if (reason === undefined) return false
  const status = await cancelParkedCall(log, fence, call.name, reason)
  if (status === 'ok') logger.info('turn was aborted while the call parked: landed the cancelled tool error, its questions closed')
  return status === 'ok'
}

/**
 * One attempt's abort: `signal` is its ctx.abortSignal, made on its first read (most attempts never
 * read it, and an AbortController costs more than the rest of a step: issue 24); `aborted` and
 * `reason` answer without it. `whenAborted` sets the one callback the abort also runs (bounded.ts
 * ends the attempt with it), instead of a listener on the signal: an EventTarget listener costs more
 * to add and remove than a step.
 */
export interface AttemptAbort {
  readonly signal: AbortSignal
  readonly aborted: boolean
  readonly reason: unknown
  /**
   * Set when the attempt ended before its tool's code did (bounded.ts): true once that code settles,
   * false if it still runs one tool timeout later. Its limit slot is held until then (R17).
   */
  running: Promise<boolean> | undefined
  abort(reason: Error): void
  whenAborted(fn: (() => void) | undefined): void
  done(): void
}

class Attempt implements AttemptAbort {
  aborted = false
  reason: unknown = undefined
  running: Promise<boolean> | undefined = undefined
  private controller: AbortController | undefined
  private onAbort: (() => void) | undefined
  /** The set of its turn's attempts that holds it (done() takes it out), if it has a turn. */
  constructor(private readonly owner?: { byTurn: Map<string, Set<AttemptAbort>>; turn: string; attempts: Set<AttemptAbort> }) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController()
      if (this.aborted) this.controller.abort(this.reason)
    }
    return this.controller.signal
  }

  abort(reason: Error): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.controller?.abort(reason)
    this.onAbort?.()
  }

  whenAborted(fn: (() => void) | undefined): void {
    this.onAbort = fn
  }

  done(): void {
    const owner = this.owner
    if (!owner) return
    owner.attempts.delete(this)
    if (owner.attempts.size === 0 && owner.byTurn.get(owner.turn) === owner.attempts) owner.byTurn.delete(owner.turn)
  }
}

/**
 * The abort signals of the tool calls running in this process, by turn. When a turn is aborted
 * (session.abort, from any process), the host hears the settle message and aborts the signals of that
 * turn's running calls: `ctx.abortSignal` fires inside the tool.
 */
export class CallAborts {
  private readonly byTurn = new Map<string, Set<AttemptAbort>>()

  /** The abort of one attempt of a call of the turn `<sid>|<inputId>`; `done()` forgets it (again: a no-op). */
  open(turn: string | undefined): AttemptAbort {
    if (!turn) return new Attempt()
    let attempts = this.byTurn.get(turn)
    if (!attempts) this.byTurn.set(turn, (attempts = new Set()))
    const attempt = new Attempt({ byTurn: this.byTurn, turn, attempts })
    attempts.add(attempt)
    return attempt
  }

  abortTurn(turn: string, reason: string): void {
    for (const attempt of this.byTurn.get(turn) ?? []) attempt.abort(new Error(reason))
  }

  /** A fan-out's child was cancelled (a `cancel` message): its attempt running here stops, landing `cancelled`. */
  cancelChild(sessionId: string, toolCallId: string, reason: string): void {
    for (const attempt of this.byTurn.get(childAbortKey(sessionId, toolCallId)) ?? []) attempt.abort(new ChildCancelled(reason))
  }
}

/** The key a fan-out child's attempts are opened under (`\0` keeps it apart from a turn's `<sid>|<inputId>`). */
export function childAbortKey(sessionId: string, toolCallId: string): string {
  return `\0${sessionId}|${toolCallId}`
}

/** Why an attempt of a fan-out child was stopped: its parent's tree cancelled it. */
export class ChildCancelled extends Error {
  constructor(readonly why: string) {
    super(why)
  }
}
