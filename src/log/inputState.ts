/** What the inputs hash keeps of an input (turn), and what a prompt is tagged with and became. */

/** The agent tool call a child session's input answers. */
export interface ParentCall {
  harness: string
  sessionId: string
  toolCallId: string
  /**
   * The fan-out tree the child session stands in (docs/fan-out.md "Trees across sessions"): the
   * session and call at its root, where its limits are counted, and the depth of the agent's place.
   */
  tree?: TreeRef
}

/** A place in a fan-out tree whose root may be in another session. */
export interface TreeRef {
  sessionId: string
  root: string
  depth: number
}

export interface InputState {
  text: string
  entryId: string
  status: 'open' | 'settled'
  harness: string
  at: number
  settledId?: string
  responses?: number
  parent?: ParentCall
  /** Inputs that joined this running turn (busy 'steer'), in arrival order. */
  steered?: string[]
  /** Its turn is paused (`onExhausted: 'pause'`) until `session.resume(inputId)`. */
  paused?: boolean
  /** The last model-call retry logged: `<responses>:<attempt>` (turnRecord.lua keeps try numbers unique). */
  retried?: string
  /** The running turn this input joined (busy 'steer'). */
  steerInto?: string
  /** The input's context as JSON text, when it has one (`prompt(text, { context })`), kept verbatim. */
  context?: string
  /** Tags and who prompted (`prompt(text, { metadata, principal })`). */
  metadata?: Record<string, string>
  principal?: string
  /** The prompt's BullMQ priority, when it gave one: every enqueue of its turn uses it (turnPriority). */
  priority?: number
  /** How it settled (inputs settled before this was kept have none: their settled record says). */
  outcome?: 'completed' | 'failed' | 'aborted'
  /** The rerun ids that opened it again (session.rerun). */
  reruns?: string[]
  /** The tools its model responses called: the tool indexes it is in (host.turns({ tool })). */
  tools?: string[]
  /** The model call try whose request may be out (beginModelTry.lua, docs/spend.md): cut if still here when the next begins. */
  trying?: { id: string }
}

/** What a prompt is tagged with: operator tags, and who prompted (a principal's string id). */
export interface InputTags {
  metadata?: Record<string, string>
  principal?: string
}

/** What became of a prompt: its turn runs now, waits in line, joined the running turn, or was refused. */
export type AddedInput =
  | { status: 'added'; entryId: string; disposition: 'run' | 'queued' | 'steered'; running?: string }
  | { status: 'exists'; entryId: string; settled: boolean; first: boolean }
  | { status: 'busy'; running: string }
  | { status: 'conflict' }

/** The context an input was given with (`prompt(text, { context })`), kept as JSON text. */
export function contextOf(input: Pick<InputState, 'context'> | null | undefined): unknown {
  return input?.context === undefined ? undefined : JSON.parse(input.context)
}
