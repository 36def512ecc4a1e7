import { callFingerprint } from './callIds.js'
import type { RequestBegin } from './callState.js'
import { scripts, type ScriptInput } from './commands/index.js'
import { openMember } from './formats.js'
import type { LogStream } from './stream.js'
import { sealJobInput } from './sealedRecords.js'

/**
 * A runTool call's job, started in its request's write (startCall.lua) under the slot a local fetch
 * lane holds for it: the tool queue's keys, the job as BullMQ stores it, the lane's lock token. The
 * local lane makes it (src/lane/bullmqInternals.ts); the log speaks Redis only, so these are names and strings.
 */
export interface JobStart {
  keys: { job: string; active: string; wait: string; prioritized: string; marker: string; meta: string; events: string; id: string }
  args: { jobId: string; data: string; opts: string; token: string; lockMs: number; worker: string; wake: '1' | '' }
}

/** 'started': the job runs on the lane's slot, and `emptyBehind` says no other job waits; 'queued': it waits in the queue. */
export type StartReply = { status: 'started'; emptyBehind: boolean; now: number } | { status: 'queued' | 'exists' | 'conflict' }

/** What a runTool request logs (requestCall.lua, includes/request.lua). */
export function requestArgs(
  stream: LogStream,
  toolCallId: string,
  name: string,
  input: unknown,
  begin?: RequestBegin,
  storedInput: unknown = input,
): ScriptInput<typeof scripts.requestCall>['args'] {
  return {
    toolCallId,
    fingerprint: begin?.fingerprint ?? callFingerprint(name, input),
    // `storedInput`: the input as the record holds it (sealed under a codec: requestedInput)
    record: stream.encode({ type: 'harness.tool.requested', toolCallId, name, input: storedInput }),
    now: Date.now(),
    sessionId: stream.sessionId,
    beginFor: begin?.harness ?? '',
    name,
    openMember: openMember(stream.sessionId, toolCallId),
    version: begin?.version ?? '',
    compact: stream.compact ? '1' : '',
  }
}

/** Logs the request of a new call, begun, and starts its job on the lane's slot, in one script. */
export async function startCall(
  stream: LogStream,
  call: { toolCallId: string; name: string; input: unknown },
  begin: RequestBegin,
  start: JobStart,
  /** The input as its job's data holds it (sealed already under a codec): the record holds the same. */
  storedInput: unknown = call.input,
): Promise<StartReply> {
  const args = { ...requestArgs(stream, call.toolCallId, call.name, call.input, begin, storedInput), ...start.args }
  const reply = await stream.script(scripts.startCall, { keys: { ...stream.scriptKeys, ...start.keys }, args })
  if (reply[0] === 'started') return { status: 'started', emptyBehind: reply[2] === 1, now: args.now }
  return { status: reply[0] }
}

/** A runTool request's input as its record holds it: the same sealed value its job's data holds (synchronous without a codec). */
export function requestedInput(stream: LogStream, input: unknown): unknown {
  return sealJobInput(stream.codec, stream.sessionId, input)
}
