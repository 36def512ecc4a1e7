/**
 * What the model reads for a tool call's outcome (turn/ builds its messages with it, events/ shows it in
 * TOOL_CALL_RESULT): strings as they are, other JSON encoded, errors as `{"error": ...}`.
 */
export function toolMessageContent(outcome: { result?: unknown; error?: { message: string } | undefined }): string {
  if (outcome.error) return JSON.stringify({ error: outcome.error.message })
  return typeof outcome.result === 'string' ? outcome.result : JSON.stringify(outcome.result ?? null)
}
