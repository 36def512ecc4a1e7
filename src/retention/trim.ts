import { applyTrim, indexKeys, planTrim, rescheduleTrim } from '../log/index.js'
import type { RetentionDeps } from './options.js'

/**
 * One trimming pass over a shard's trim index (compaction.trimAfter, docs/compaction.md "Trimming"):
 * each session due has the span before its old enough compactions exported (`retention.export` with
 * the span's end) and then removed in one write; what is not due yet, or held by open work, gets the
 * time to look again. Returns the sessions trimmed with the entries each lost.
 */
export async function trimShard(
  deps: RetentionDeps,
  shard: number,
  { limit = 100, now = Date.now() }: { limit?: number; now?: number },
): Promise<Array<{ sessionId: string; entries: number }>> {
  const { redis, retention, logger } = deps
  const index = indexKeys(deps.prefix, shard, deps.shards).trims
  const due = await redis.zrangebyscore(index, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  const trimmed: Array<{ sessionId: string; entries: number }> = []
  for (let i = 0; i < due.length; i += 2) {
    const sessionId = due[i]!
    const stream = deps.logFor(sessionId).stream
    // the period is the session's own (its latest compaction's trimAfter); a due score was set with it
    const plan = await planTrim(stream, now)
    if (!('cut' in plan)) {
      await rescheduleTrim(stream, plan)
      continue
    }
    try {
      await retention.export(sessionId, plan.jsonl, { before: plan.cut })
    } catch (err) {
      logger.warn({ err, sessionId }, 'trimming: the export of a span failed; it is kept and tried again later')
      continue
    }
    // a trimmed id may be used again (a model's call id, a caller's input id): its finished job goes first
    await deps.clearJobs?.(sessionId, plan.jobs)
    const reply = await applyTrim(stream, plan)
    if (reply[0] === 'trimmed') {
      trimmed.push({ sessionId, entries: reply[1] })
      logger.debug({ sessionId, entries: reply[1], before: plan.cut }, 'trimming: span exported and trimmed')
    } else logger.debug({ sessionId, open: reply[1] }, 'trimming: an item of the span opened again; looked at again next pass')
  }
  return trimmed
}
