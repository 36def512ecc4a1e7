import type { Queue } from 'bullmq'
import { toolJobId, turnJobId, type ToolJobData, type TurnJobData } from './names.js'
import type { RuntimeHarness } from './runtime.js'

/** A tool job retries only infrastructure failures (a tool's own error is a landed tool error). */
export const toolJobOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 500 },
  removeOnComplete: { age: 24 * 3600, count: 100_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
} as const

/** A turn's attempts are `durability.maxAttempts` (R15); model failures retry with backoff. */
export function turnJobOptions(harness: RuntimeHarness) {
  return {
    attempts: harness.durability.maxAttempts,
    backoff: { type: 'exponential', delay: 500 },
    removeOnComplete: { age: 24 * 3600 },
    removeOnFail: { age: 7 * 24 * 3600 },
  }
}

/**
 * Enqueues the turn of an input under its deterministic job id: adding it again is a no-op while the
 * job exists, so every caller (prompt, agent call, sweeper) may add it again after a crash.
 */
export function enqueueTurn(turns: Queue<TurnJobData>, harness: RuntimeHarness, sessionId: string, inputId: string) {
  return turns.add('turn', { harness: harness.name, sessionId, inputId }, { ...turnJobOptions(harness), jobId: turnJobId(sessionId, inputId) })
}

/** The job of one tool call (for `add` or `addBulk`): deterministic id; a call of a turn names the turn, and its job may be the turn's child. */
export function toolJob(
  harness: RuntimeHarness,
  sessionId: string,
  call: { toolCallId: string; name: string; input: unknown; inputTooLarge?: number },
  turn: { inputId?: string; parent?: { id: string; queue: string } } = {},
) {
  return {
    name: call.name,
    data: {
      harness: harness.name,
      sessionId,
      toolCallId: call.toolCallId,
      name: call.name,
      input: call.input,
      ...(turn.inputId ? { inputId: turn.inputId } : {}),
      ...(call.inputTooLarge !== undefined ? { inputTooLarge: call.inputTooLarge } : {}),
    } as ToolJobData,
    opts: { ...toolJobOptions, jobId: toolJobId(sessionId, call.toolCallId), ...(turn.parent ? { parent: turn.parent } : {}) },
  }
}
