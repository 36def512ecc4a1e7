/** Options of `session.prompt(text, options)`. */
export interface PromptOptions {
  inputId?: string
  /**
   * JSON data every tool call of the turn gets as `ctx.context` (e.g. who asked). Kept with the input
   * in the log, so it must be JSON within `maxValueBytes` and hold no session secret. The same inputId
   * again keeps the first context.
   */
  context?: unknown
  /**
   * The turn's BullMQ priority, 1 (runs first) to 2^21; its tool calls inherit it. Default: the
   * harness's `priority`. A turn that waits in the session's line, or that the sweeper enqueues again,
   * gets the harness's default (docs/limits.md).
   */
  priority?: number
}
