import { skipsBegin } from '../call/index.js'
import { toolOf, type Harness } from '../core/index.js'
import { callFingerprint, type CallMarks, type SessionLog } from '../log/index.js'
import { enqueueCallBehind, type HarnessQueues } from '../queue/index.js'

/**
 * runTool's request and job of a new call (a generated id), in one round trip: the request is sent
 * right before the add on the queue's connection. Of a tool that may skip its begin, the call is
 * begun with its request and its job marked, so the job's first delivery runs without a begin of its
 * own (one script less a call; src/log/callMarks.ts).
 */
export function enqueueNewCall(
  queues: HarnessQueues,
  harness: Harness,
  log: SessionLog,
  call: { toolCallId: string; name: string; input: unknown },
  marks: CallMarks | undefined,
) {
  const { toolCallId, name, input } = call
  if (!marks || !skipsBegin(toolOf(harness, name)))
    return enqueueCallBehind(queues, harness, log.sessionId, call, (client) => log.via(client).requestCall(toolCallId, name, input))
  const fingerprint = callFingerprint(name, input)
  const mark = marks.sign(log.sessionId, toolCallId, fingerprint, Date.now())
  return enqueueCallBehind(queues, harness, log.sessionId, { toolCallId, name, input, mark }, (client) =>
    log.via(client).requestCall(toolCallId, name, input, { harness: harness.name, fingerprint, version: harness.version }),
  )
}
