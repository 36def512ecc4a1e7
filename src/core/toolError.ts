/** A tool error as the model reads it and the log holds it (`harness.tool.result`'s `error`). */
export interface ToolErrorPayload {
  message: string
  code?: string | undefined
}
