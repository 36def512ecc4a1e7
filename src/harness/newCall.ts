import { skipsBegin } from '../call/index.js'
import { toolOf, type Harness } from '../core/index.js'
import { callFingerprint, type CallMarks, type SessionLog } from '../log/index.js'
import { enqueueCallBehind, toolJob, type HarnessQueues } from '../queue/index.js'

/**
 * runTool's request and job of a new call (a generated id), in one round trip: the request is sent
 * right before the add on the queue's connection. Of a tool that may skip its begin, the call is
 * begun with its request and its job marked, so the job's first delivery runs without a begin of its
 * own (one script less a call; src/log/callMarks.ts); and when a tool lane of this process has a slot
 * free, the job is started in that same script on the slot, with no add or fetch of its own
 * (startCall.lua, EagerStartWorker.reserveStart).
 */
export function enqueueNewCall(
  queues: HarnessQueues,
  harness: Harness,
  log: SessionLog,
  call: { toolCallId: string; name: string; input: unknown },
  marks: CallMarks | undefined,
): Promise<unknown> {
  const { toolCallId, name, input } = call
  if (!marks || !skipsBegin(toolOf(harness, name)))
    return enqueueCallBehind(queues, harness, log.sessionId, call, (client) => log.via(client).requestCall(toolCallId, name, input))
  const fingerprint = callFingerprint(name, input)
  const mark = marks.sign(log.sessionId, toolCallId, fingerprint, Date.now())
  const begin = { harness: harness.name, fingerprint, version: harness.version }
  const marked = { toolCallId, name, input, mark }
  const lane = queues.startOn(log.sessionId, toolJob(log.sessionId, marked))
  if (!lane)
    return enqueueCallBehind(queues, harness, log.sessionId, marked, (client) =>
      log.via(client).requestCall(toolCallId, name, input, begin),
    )
  // the lane's slot is held from here: the reply (or its failure) gives the job to it or gives it back
  const reply = log.via(queues.connection).startCall(marked, begin, lane.job)
  lane.sent(reply)
  return reply
}
