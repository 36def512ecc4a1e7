import { scripts } from './commands/index.js'
import { openMember } from './formats.js'
import type { LogStream } from './stream.js'

/**
 * The event timer of a call parked without its BullMQ job (a runTool call in step.waitForEvent):
 * one member of its shard's event timers (keys.ts `eventTimers`), written by parkCall.lua with the
 * park. While it is there the call has no job by design; the sweeper leaves such a call alone.
 */

/** The wake-up time (ms) of the call's event timer; null when it has none (its job waits, or it was enqueued). */
export async function eventTimerOf(stream: LogStream, toolCallId: string): Promise<number | null> {
  const member = openMember(stream.sessionId, toolCallId)
  const score = await stream.command('eventTimer', () => stream.redis.zscore(stream.index.eventTimers, member))
  return score === null ? null : Number(score)
}

/** Takes the call's timer away once its job was enqueued for the park of `epoch` (kept if a newer park wrote it). */
export async function clearEventTimer(stream: LogStream, toolCallId: string, epoch: number): Promise<boolean> {
  const timerMember = openMember(stream.sessionId, toolCallId)
  const keys = { calls: stream.keys.calls, eventTimers: stream.index.eventTimers }
  return (await stream.script(scripts.clearEventTimer, { keys, args: { toolCallId, timerMember, epoch } })) === 1
}
