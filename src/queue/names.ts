import { shardBase } from '../log/index.js'

/**
 * BullMQ names. The queues of one shard carry the shard's hash tag (`<prefix>:{<shard tag>}:jobs`), so
 * a turn (parent) and its tool jobs (children), all of one session, live in one Redis Cluster slot,
 * and the shards' queues spread over the masters. Job ids are built in log/formats.ts: they never
 * contain ':' and never look like integers.
 */
export function bullPrefix(prefix: string, shard: number, shards: number): string {
  return `${shardBase(prefix, shard, shards)}:jobs`
}

export function turnQueueName(harness: string): string {
  return `turns.${harness}`
}

export function toolQueueName(harness: string): string {
  return `tools.${harness}`
}

/** A tool job's data (its queue names its harness, the job's name is the tool's name). */
export interface ToolJobData {
  sessionId: string
  toolCallId: string
  input: unknown
  /** The turn whose batch holds this call; absent for runTool. */
  inputId?: string
  /** The model's input was this many bytes, over the limit: the call gets a tool error. */
  inputTooLarge?: number
  /** W3C trace context of the turn that enqueued it (OpenTelemetry; absent without an SDK). */
  traceparent?: string
  /** A runTool call its request began: the mark that lets its first delivery skip its begin (src/log/callMarks.ts). */
  mark?: string
}

export interface TurnJobData {
  harness: string
  sessionId: string
  inputId: string
  /** W3C trace context of the prompt (OpenTelemetry; absent without an SDK). */
  traceparent?: string
}
