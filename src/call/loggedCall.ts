import type { Job } from 'bullmq'
import { CallNotLoggedError } from '../errors/index.js'
import { isAgentTool, toolOf, type Harness } from '../core/index.js'
import { callFingerprint, openJobInput, openMember, parseToolJobId, type BeginResult, type SessionLog } from '../log/index.js'
import type { ToolJobData } from '../queue/index.js'
import { replayOf } from '../tool/index.js'
import { needsApproval } from './approval.js'
import { childAbortKey, type AttemptAbort, type CallAborts } from './callAborts.js'
import type { Logger } from '../logger.js'
import type { CallMarks } from '../log/index.js'

/** A tool job's call: its session, id, turn and input, and the tool's name. */
export type ToolCall = ToolJobData & { sessionId: string; toolCallId: string; name: string }

/** What beginning a call needs of the tool job's deps (ToolJobDeps has it). */
interface LoggedCallDeps {
  harness: Harness
  logFor(sessionId: string): SessionLog
  aborts: CallAborts
  logger: Logger
  /** The deployment's call marks: a verified first delivery of a call its request began skips its begin. */
  marks?: CallMarks | undefined
  /** The job was started by its request's write in this process (LocalLane.startedHere): no mark to check. */
  startedHere?: boolean | undefined
}

type Attempt = AttemptAbort

/**
 * Begins an attempt of the call a tool job names, as the log holds it (DESIGN §1: the log is the
 * truth). The job's id names the session and the call (an id cannot be edited, its data can); the
 * begin script checks the data's tool, input and turn against the fingerprint the logged call wrote,
 * in the same round trip. Data that disagrees (edited in bull-board, `job.updateData`) is ignored with
 * a warning: the call is read from the log and begins as logged. A call that was never logged runs
 * nothing (CallNotLoggedError).
 */
export async function beginLoggedCall(
  job: Job<ToolJobData>,
  deps: LoggedCallDeps,
): Promise<{ call: ToolCall; begin: BeginResult; attempt: Attempt; log: SessionLog }> {
  const ids = parseToolJobId(job.id ?? '')
  if (!ids) throw new Error(`Tool job ${JSON.stringify(job.id)} is not a call's job (call|<sessionId>|<toolCallId>): nothing runs.`)
  const log = deps.logFor(ids.sessionId)
  // the job's data holds the input sealed under a codec (docs/encryption.md): its fingerprint is the input's own
  const opened = openJobInput(log.stream.codec, ids.sessionId, job.data.input)
  const data = opened === job.data.input ? job.data : { ...job.data, input: await opened }
  const claimed = toolCall(ids, data.traceparent, data, job.name)
  if (beganWithRequest(job, ids, claimed, deps)) {
    return {
      call: claimed,
      begin: { kind: 'fresh', epoch: 1, attempt: 1, version: deps.harness.version },
      attempt: deps.aborts.open(undefined),
      log,
    }
  }
  const checked = await begin(log, claimed, fingerprintOf(claimed), deps)
  if (checked && idsAgree(data, ids)) return checked
  if (checked) {
    warnDisagreement(deps, ids, idsDisagree(data, ids))
    return checked
  }
  const logged = await log.findLoggedCall(ids.toolCallId)
  if (!logged) throw new CallNotLoggedError(ids.sessionId, ids.toolCallId)
  const call = toolCall(ids, data.traceparent, logged, logged.name)
  const fields: string[] = [...idsDisagree(data, ids), ...(['inputId', 'inputTooLarge'] as const).filter((f) => data[f] !== call[f])]
  if (JSON.stringify(data.input ?? null) !== JSON.stringify(call.input ?? null)) fields.push('input')
  if (job.name !== call.name) fields.push('name')
  warnDisagreement(deps, ids, fields)
  // taken from the log itself: begun unchecked (a fingerprint of an older version may differ)
  return (await begin(log, call, '', deps))!
}

/** The data names the job id's session and call, or leaves them out (a parked job's data: includes/slimJob.lua). */
function idsAgree(data: ToolJobData, ids: { sessionId: string; toolCallId: string }): boolean {
  return (
    (data.sessionId === undefined || data.sessionId === ids.sessionId) &&
    (data.toolCallId === undefined || data.toolCallId === ids.toolCallId)
  )
}

function idsDisagree(data: ToolJobData, ids: { sessionId: string; toolCallId: string }): string[] {
  return (['sessionId', 'toolCallId'] as const).filter((f) => data[f] !== undefined && data[f] !== ids[f])
}

/**
 * A runTool call of a tool that may skip its begin: replay 'safe' (a cut one runs again, so a first
 * attempt nobody saw begin is no loss), not an agent tool nor one that needs an approval (their
 * first acts read the call's state). Its request begins it (requestCall.lua) and marks its job.
 */
export function skipsBegin(tool: unknown): boolean {
  return !!tool && replayOf(tool) === 'safe' && !isAgentTool(tool) && !needsApproval(tool)
}

/**
 * True for the first delivery of a job its runTool request began (epoch 1): its data is the logged
 * call's (the mark verifies its ids, tool and input: callMarks.ts), BullMQ runs it for the first
 * time and it did not stall, so no attempt of the call can have begun. It runs without a begin of its
 * own; a later delivery begins as any job does, and its begin counts the call cut (a new epoch).
 */
function beganWithRequest(job: Job<ToolJobData>, ids: { sessionId: string; toolCallId: string }, claimed: ToolCall, deps: LoggedCallDeps) {
  const { data } = job
  if (data.mark === undefined || data.inputId !== undefined || data.inputTooLarge !== undefined) return false
  if (data.sessionId !== ids.sessionId || data.toolCallId !== ids.toolCallId) return false
  if (job.attemptsStarted !== 1 || job.stalledCounter > 0 || !skipsBegin(toolOf(deps.harness, job.name))) return false
  // started by this process in the write of the request that began it, with this very data (startCall.lua)
  if (deps.startedHere) return true
  return deps.marks?.verify(ids.sessionId, ids.toolCallId, fingerprintOf(claimed), data.mark, Date.now()) === true
}

/**
 * A call of these ids with the tool `name` and the input and turn of `source` (the job's data, or
 * the logged call). Built field by field, not spread: one is made for every job.
 */
function toolCall(
  ids: { sessionId: string; toolCallId: string },
  traceparent: string | undefined,
  source: { input?: unknown; inputId?: string | undefined; inputTooLarge?: ToolCall['inputTooLarge'] },
  name: string,
): ToolCall {
  const call: ToolCall = { sessionId: ids.sessionId, toolCallId: ids.toolCallId, input: source.input, name }
  if (traceparent) call.traceparent = traceparent
  if (source.inputId !== undefined) call.inputId = source.inputId
  if (source.inputTooLarge !== undefined) call.inputTooLarge = source.inputTooLarge
  return call
}

/** One begin; undefined when the job's call is not the logged one (nothing was written). */
async function begin(log: SessionLog, call: ToolCall, fingerprint: string, deps: LoggedCallDeps) {
  const tool = toolOf(deps.harness, call.name)
  const owner = { harness: deps.harness.name, version: deps.harness.version, ...(call.inputId ? { inputId: call.inputId } : {}) }
  // opened before the turn's input is read (beginCall returns it): a settle from now on fires its
  // signal, one before it is seen there
  // a turn's call stops with its turn; a fan-out's child when its tree cancels it (a `cancel` message)
  const key = call.inputId
    ? openMember(call.sessionId, call.inputId)
    : call.toolCallId.includes('.')
      ? childAbortKey(call.sessionId, call.toolCallId)
      : undefined
  const attempt = deps.aborts.open(key)
  try {
    const begun = await log.calls.beginLoggedCall(call.toolCallId, call.name, tool ? replayOf(tool) : 'never', owner, fingerprint)
    if (begun !== 'unverified') return { call, begin: begun, attempt, log }
  } catch (error) {
    attempt.done()
    throw error
  }
  attempt.done()
  return undefined
}

function fingerprintOf(call: ToolCall): string {
  return callFingerprint(call.name, call.input, { inputId: call.inputId, inputTooLarge: call.inputTooLarge })
}

/** Names the fields that disagreed, never their values (job data is anyone's with queue access). */
function warnDisagreement(deps: LoggedCallDeps, ids: { sessionId: string; toolCallId: string }, fields: readonly string[]): void {
  // the same call, its request mark missing or of an older version: nothing to warn about
  if (fields.length === 0) return deps.logger.debug(ids, 'tool job began from its logged call (no matching request mark)')
  deps.logger.warn(
    { ...ids, fields },
    "tool job data disagrees with the session log; it is ignored and the call runs as logged (was the job's data edited?)",
  )
}
