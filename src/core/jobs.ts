/** A tool job's data (its queue names its harness, the job's name is the tool's name). */
export interface ToolJobData {
  /** Absent in the data of a job that parked delayed (its id names the session and the call: formats.ts toolJobId). */
  sessionId?: string
  toolCallId?: string
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

/** A turn job's data. */
export interface TurnJobData {
  harness: string
  sessionId: string
  inputId: string
  /** W3C trace context of the prompt (OpenTelemetry; absent without an SDK). */
  traceparent?: string
}
