import type { InputState } from './inputState.js'
import { hasType, type LogRecord, type RecordOf } from './records.js'
import type { LogEntry } from './stream.js'

/** A tool call in the ledger (callLedger.ts, a part of SessionLog): how an attempt began, the stored state, its owner and fence. */
type BeginKind = 'done' | 'fresh' | 'resume' | 'rerun' | 'cut'
export interface BeginResult {
  kind: BeginKind
  epoch: number
  attempt: number
  /** The state of the call's turn input, read in the same script (a call of a turn that began). */
  input?: InputState | null
  /** The harness version the call began under (its first begin); absent for a call begun without one. */
  version?: string
}

export interface CallState {
  status: 'running' | 'parked' | 'done' | 'again'
  epoch: number
  attempt: number
  replay: 'safe' | 'never'
  name: string
  owner?: CallOwner
  /** The harness version the call began under. */
  version?: string
  result?: RecordOf<'harness.tool.result'>
  /** The log entry id of its kept result, once done. */
  resultEntryId?: string
}

/** A call as its log record holds it (findLoggedCall). */
export interface LoggedCall {
  name: string
  input: unknown
  /** The turn whose model response holds it; none for a runTool call. */
  inputId?: string
  inputTooLarge?: number
}

/** Where a call belongs: its harness and, for a call of a turn, the turn's inputId (none for runTool). */
export interface CallOwner {
  harness: string
  inputId?: string
  /** The version of the harness that begins the call (kept by its first begin only). */
  version?: string
}

/** How a call parks (CallLedger.parkCall). */
export interface ParkOptions {
  /** Its job ends now: its wake-up time goes to the shard's event timers (eventTimers.ts). */
  withoutJob?: boolean
  /** The tool itself parks (the default; it began: R19 keeps a cancelled `never` call), not its limit or its approval. */
  inTool?: boolean
  /** The BullMQ job that waits delayed, slimmed in the same write (includes/slimJob.lua). */
  job?: ParkedJob
}

/** A parked call's BullMQ job as the log names it: its hash's key, its id, the data it keeps while parked (JSON). */
export interface ParkedJob {
  key: string
  id: string
  data: string
}

/** What a fenced write names: the call and the attempt's epoch. */
export interface Fence {
  toolCallId: string
  epoch: number
}

/**
 * A call's state as the calls hash holds it (`q`: begun with its runTool request, not begun since:
 * requestCall.lua). Its names are a field of their own (`<toolCallId>\0names`: namesOf), so
 * each value stays under Redis's 64 B hash-max-listpack-value (issue 29); a state written before
 * holds `n`, `h` and `v` itself, and is read as is.
 */
interface StoredCallState {
  s: CallState['status']
  e: number
  a: number
  r: CallState['replay']
  i?: string
  q?: 1
  /** A `replay: 'never'` call whose tool began (a park in it), or, landed, ended without anyone knowing whether it finished (ToolEnd). */
  t?: 1
  /** Landed: the entry id of its harness.tool.result record. */
  id?: string
  /** Older states only: the tool's name, the harness and the harness version the call began under (docs/deploys.md). */
  n?: string
  h?: string
  v?: string
}

/** A call's names field (JSON `[name, harness, version]`, '' for none): its tool, its harness and the harness version it began under. */
function namesOf(json: string): [name: string, harness: string, version: string] {
  const names: unknown = JSON.parse(json)
  const at = (i: number) => (Array.isArray(names) && typeof names[i] === 'string' ? names[i] : '')
  return [at(0), at(1), at(2)]
}

/** A runTool request that begins its call too: the call's harness, and its fingerprint made already. */
export type RequestBegin = { harness: string; fingerprint: string; version?: string }

/** A step's failed tries so far (`a`), the next try's time (`n`), or why there is none (`x`), and the last error. */
export interface StepRetryState {
  a: number
  n?: number
  x?: 'exhausted' | 'stopped'
  m: string
  c?: string
}

/** A call's state from the calls hash (its state JSON, its names field, and its kept result record, when it has one). */
export function callStateOf(state: string, result: string | null, names: string | null = null): CallState {
  const s = JSON.parse(state) as StoredCallState
  const [name, harness, version] = names ? namesOf(names) : [s.n ?? '', s.h, s.v]
  return {
    status: s.s,
    epoch: s.e,
    attempt: s.a,
    replay: s.r,
    name,
    ...(version ? { version } : {}),
    ...(harness ? { owner: { harness, ...(s.i ? { inputId: s.i } : {}) } } : {}),
    ...(result ? { result: JSON.parse(result) as RecordOf<'harness.tool.result'> } : {}),
    ...(s.id ? { resultEntryId: s.id } : {}),
  }
}

/** beginCall.lua's reply of an attempt that began; `withInput`: the call is a turn's (the reply holds its input's state). */
export function beginResultOf(
  [kind, epoch, attempt, input, version]: [BeginKind, number, number, string?, string?],
  withInput: boolean,
): BeginResult {
  const begun = { kind, epoch: Number(epoch), attempt: Number(attempt), ...(version ? { version } : {}) }
  return withInput && kind !== 'done' ? { ...begun, input: input ? (JSON.parse(input) as InputState) : null } : begun
}

/** The call as the record that asked for it holds it (its turn's model response, or runTool's request), in `entries`. */
export function loggedCallIn(entries: ReadonlyArray<LogEntry<LogRecord>>, toolCallId: string): LoggedCall | undefined {
  for (const { record } of entries) {
    if (hasType(record, 'harness.tool.requested') && record.toolCallId === toolCallId) return { name: record.name, input: record.input }
    const call = hasType(record, 'harness.model.response') ? record.toolCalls.find((c) => c.toolCallId === toolCallId) : undefined
    if (call && hasType(record, 'harness.model.response')) {
      const tooLarge = call.inputTooLarge === undefined ? {} : { inputTooLarge: call.inputTooLarge }
      return { name: call.name, input: call.input, inputId: record.inputId, ...tooLarge }
    }
  }
  return undefined
}
