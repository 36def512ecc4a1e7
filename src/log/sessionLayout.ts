import { indexKeys, sessionKeys, type IndexKeys, type SessionKeys } from './keys.js'
import { assertShards, shardOf } from './shards.js'

/** A session's keys and its shard's indexes by the names the scripts' declarations give them (no staged list: a call's is its own). */
export type ScriptKeys = Omit<SessionKeys, 'staged'> &
  Pick<IndexKeys, 'sessions' | 'openCalls' | 'openQuestions' | 'openTurns' | 'eventTimers' | 'trims'>

/** Where one session's keys lie: made once a session (a log is made per job, per runTool, per view). */
interface SessionLayout {
  keys: SessionKeys
  shard: number
  index: IndexKeys
  scriptKeys: ScriptKeys
}

/** Layouts by prefix, shard count and session; emptied when full (a busy worker sees the same sessions again). */
const layouts = new Map<string, SessionLayout>()
const MAX_LAYOUTS = 10_000

export function layoutOf(prefix: string, sessionId: string, shards: number): SessionLayout {
  // a session id has no NUL (keys.ts) and the count no `|`: the id is unambiguous whatever the prefix holds
  const id = `${shards}|${prefix}\0${sessionId}`
  let layout = layouts.get(id)
  if (layout) return layout
  assertShards(shards)
  const keys = sessionKeys(prefix, sessionId, shards)
  const shard = shardOf(sessionId, shards)
  const index = indexKeys(prefix, shard, shards)
  const { staged: _perCall, ...session } = keys
  const { sessions, openCalls, openQuestions, openTurns, eventTimers, trims } = index
  // shared by every log of the session: frozen, so no part can change another's keys
  const scriptKeys = Object.freeze({ ...session, sessions, openCalls, openQuestions, openTurns, eventTimers, trims })
  layout = { keys: Object.freeze(keys), shard, index: Object.freeze(index), scriptKeys }
  if (layouts.size >= MAX_LAYOUTS) layouts.clear()
  layouts.set(id, layout)
  return layout
}
