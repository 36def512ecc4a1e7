import type { InputState, SessionLog } from '../log/index.js'

/** The most characters of a child agent's text one progress event carries. */
const TEXT_CHARS = 500

/** What a child agent's turn reports: a model response (its text, the tools it called), or how it settled. */
export type ChildProgress =
  | { event: 'response'; text?: string; toolCalls: string[] }
  | { event: 'settled'; outcome: 'completed' | 'failed' | 'aborted'; text?: string; error?: string }

/**
 * A child agent's turn reports to the root session of its tree (docs/fan-out.md "Seen from above"):
 * a CUSTOM event `harness.child` on the root's live stream, so the root's followers see the tree's
 * progress. Best effort, as every live event: never awaited, never the source of truth.
 */
export function reportToRoot(
  logFor: (sessionId: string) => SessionLog,
  log: SessionLog,
  input: InputState | null,
  progress: ChildProgress,
): void {
  const parent = input?.parent
  if (!parent?.tree) return
  const text = progress.text === undefined ? {} : { text: progress.text.slice(0, TEXT_CHARS) }
  const value = {
    sessionId: log.sessionId,
    harness: input!.harness,
    parent: { sessionId: parent.sessionId, toolCallId: parent.toolCallId },
    depth: parent.tree.depth,
    ...progress,
    ...text,
  }
  const root = logFor(parent.tree.sessionId)
  // the event names the root's call of the tree when the parent is in the root's session
  const from = parent.sessionId === root.sessionId ? { toolCallId: parent.toolCallId } : {}
  void root.stream.appendLive({ k: 'custom', ...from, name: 'harness.child', value }).catch(() => {})
}
