import { StorageError } from '../errors/index.js'
import type { SessionLog } from './sessionLog.js'
import { decodeValue } from './stepValues.js'
import type { CallState } from './callState.js'
import { retryField, stepField } from './keys.js'

/** A call of a session as storage holds it: its state (none when it is logged and not begun yet) and its stored steps. */
export interface StoredCall {
  toolCallId: string
  state: CallState | null
  /** Step name → stored value (a sleep's `{ wakeAt }`, an ask's question id), in no particular order. */
  steps: Map<string, unknown>
  /** Step name → its failed tries (R16) and whether they ended: a step without a value whose tries go on waits on its backoff. */
  retries: Map<string, { tries: number; ended: boolean }>
}

const SEP = '\0'

async function read<T>(log: SessionLog, operation: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw new StorageError(operation, log.sessionId, error)
  }
}

/** A step's stored retry state (callState.ts StepRetryState), as a deploy check reads it. */
function retryOf(json: string): { tries: number; ended: boolean } {
  const state: unknown = JSON.parse(json)
  if (typeof state !== 'object' || state === null) return { tries: 0, ended: true }
  return { tries: 'a' in state && typeof state.a === 'number' ? state.a : 0, ended: 'x' in state && state.x !== undefined }
}

/**
 * Every call of a session that has no kept result yet (running, parked, or logged and not begun),
 * with its stored steps: what a deploy check replays. Reads the session's whole calls and steps
 * hashes: for `harness check-deploy` and replay tests, never for a hot path.
 */
export async function storedOpenCalls(log: SessionLog): Promise<StoredCall[]> {
  const [calls, steps] = await read(log, 'storedOpenCalls', () =>
    Promise.all([log.stream.redis.hgetall(log.stream.keys.calls), log.stream.redis.hgetall(log.stream.keys.steps)]),
  )
  const ids = new Set<string>()
  for (const field of Object.keys(calls)) {
    const [id, part] = field.split(SEP)
    // a logged call (its request mark) or a begun one; `\0result` comes with a state
    if (id && (part === undefined || part === 'req')) ids.add(id)
  }
  const open: StoredCall[] = []
  for (const toolCallId of ids) {
    const state = calls[toolCallId] === undefined ? null : await log.calls.getCall(toolCallId)
    if (state?.status === 'done') continue
    const prefix = stepField(toolCallId, '')
    const retryPrefix = retryField(toolCallId, '')
    const stored = new Map<string, unknown>()
    const retries = new Map<string, { tries: number; ended: boolean }>()
    for (const [field, value] of Object.entries(steps)) {
      if (field.startsWith(prefix)) stored.set(field.slice(prefix.length), decodeValue(value))
      else if (field.startsWith(retryPrefix)) retries.set(field.slice(retryPrefix.length), retryOf(value))
    }
    open.push({ toolCallId, state, steps: stored, retries })
  }
  return open
}

/** Moves a stored sleep's wake time to `at`: for crash exploration, which must not wait out a three-day sleep. */
export async function moveWakeTime(log: SessionLog, toolCallId: string, name: string, at: number): Promise<void> {
  await read(log, 'moveWakeTime', () =>
    log.stream.redis.hset(log.stream.keys.steps, stepField(toolCallId, name), JSON.stringify({ wakeAt: at })),
  )
}
