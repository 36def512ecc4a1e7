import { readSessionUsage, type SessionLog, type UsageFigures } from '../log/index.js'

/**
 * The spend of a session (docs/spend.md): every model call try counted once (failed and cut tries
 * too), in all, by model, by principal (who prompted the turn) and per turn (by inputId).
 */
export interface SessionUsage {
  total: UsageFigures
  byModel: Record<string, UsageFigures>
  byPrincipal: Record<string, UsageFigures>
  turns: Record<string, UsageFigures>
  /**
   * A session whose fan-out started child agents (docs/fan-out.md): its own spend plus every child
   * agent's at any depth, each added once its turn settled. Absent for a session with none.
   */
  tree?: UsageFigures
}

/** The session's totals hash, read in one command (a session from before the totals: its log summed once). */
export async function usageOf(log: SessionLog): Promise<SessionUsage> {
  return readSessionUsage(log.stream)
}
