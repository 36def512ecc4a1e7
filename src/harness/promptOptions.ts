import { randomUUID } from 'node:crypto'
import type { Harness } from '../core/index.js'
import { assertInputId, type InputTags } from '../log/index.js'
import { encodeChecked, toJsonCopy } from '../tool/index.js'
import { assertNoSecrets } from './callerSecrets.js'
import { checkPriority } from './limitOptions.js'
import { checkTags } from './tags.js'

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
  /** Operator tags, searchable with `host.turns({ metadata })` (checked: InvalidTagsError). */
  metadata?: Record<string, string>
  /** Who prompted (a principal's string id): in the log and the timeline. */
  principal?: string
}

/** A prompt as `checkPrompt` passed it: what `addInput` logs. */
export interface CheckedPrompt {
  inputId: string
  priority?: number
  context?: unknown
  tags: InputTags
}

/**
 * Every check `session.prompt` makes before it writes (text, input id, priority, context, tags, the
 * size limit, R6's session secrets), so a prompt made later (a schedule's tick) can be checked now.
 * Throws the error the prompt would; resolves with what to log.
 */
export async function checkPrompt(harness: Harness, sessionId: string, text: string, options: PromptOptions): Promise<CheckedPrompt> {
  if (typeof text !== 'string') throw new TypeError('prompt(text): text must be a string.')
  const inputId = options.inputId ?? randomUUID()
  assertInputId(inputId)
  const priority = options.priority === undefined ? undefined : checkPriority(options.priority, 'session.prompt')
  const { maxValueBytes } = harness.durability
  const what = `Context of prompt ${inputId}`
  const context = options.context === undefined ? undefined : toJsonCopy(options.context, what)
  const tags = checkTags(options)
  await assertNoSecrets(
    harness,
    sessionId,
    { what: `Prompt ${inputId}`, encoded: encodeChecked(text, `Prompt ${inputId}`, maxValueBytes) },
    { what, encoded: encodeChecked(context, what, maxValueBytes) },
  )
  return { inputId, tags, ...(priority === undefined ? {} : { priority }), ...(context === undefined ? {} : { context }) }
}
