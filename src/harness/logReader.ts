import { followLog, type FollowOptions, type LogEntry, type ReadOptions, type RecordOf, type SessionLog } from '../log/index.js'

/** A read-only view of a session's log: what callers may do with it (writes go through the session). */
export interface LogReader {
  /** The log's entries (`{ id, record }`) in order, between stream ids, of some record types, at most `limit`. */
  read(options?: ReadOptions): Promise<LogEntry[]>
  /** The log's entries from `after` on, waiting for new ones (on the process's shared reader) until `signal` aborts. */
  follow(options?: FollowOptions): AsyncGenerator<LogEntry>
  /** Where an input stands: its record's entry id, whether it settled, when it came; null for none. */
  input(inputId: string): Promise<{ entryId: string; status: 'open' | 'settled'; at: number } | null>
  /**
   * The conversation: inputs, model responses, the results of turns' calls, settles and compactions,
   * in log order, from the session's conversation projection (its cost follows the conversation, not
   * the log). A compaction leaves out nothing here (R21). `sealed: 'mask'`: a value this process has
   * no key for reads as `[encrypted]` instead of failing with the codec's error (docs/encryption.md).
   */
  conversation(options?: { sealed?: 'throw' | 'mask' }): Promise<LogEntry[]>
  /**
   * Where a tool call stands, O(1): `requested` (logged, no attempt began yet), `running`, `parked`
   * (a sleep, an ask, an event wait) or `done` with its kept result record and that record's entry id;
   * null for a call never requested.
   */
  call(toolCallId: string): Promise<CallStanding | null>
}

/** What `session.log.call(toolCallId)` returns. */
export interface CallStanding {
  status: 'requested' | 'running' | 'parked' | 'done'
  /** The tool's name (absent while only requested). */
  name?: string
  result?: RecordOf<'harness.tool.result'>
  resultEntryId?: string
}

/** The session's log, read-only. */
export function logReader(log: SessionLog): LogReader {
  return {
    read: (o) => log.stream.read(o),
    follow: (o) => followLog(log.stream, o),
    conversation: (o) => log.inputs.conversation(o),
    input: async (inputId) => {
      const input = await log.inputs.getInput(inputId)
      return input && { entryId: input.entryId, status: input.status, at: input.at }
    },
    call: async (toolCallId) => {
      const state = await log.calls.getCall(toolCallId)
      if (!state) return (await log.calls.isRequested(toolCallId)) ? { status: 'requested' } : null
      const { name, result, resultEntryId } = state
      // 'again' (a rerun reset its failed result): it runs again
      return {
        status: state.status === 'again' ? 'running' : state.status,
        name,
        ...(result ? { result } : {}),
        ...(resultEntryId ? { resultEntryId } : {}),
      }
    },
  }
}
