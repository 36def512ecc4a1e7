import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'

/**
 * A JSON value the model reads. `object` rather than a recursive JSON type: step.do checks its value's
 * type member by member, and a recursive type is too deep for that check; the wire gave us JSON anyway.
 */
export type ModelValue = string | number | boolean | null | object

/**
 * What a step keeps of an MCP tool result: the value the model reads and whether the server called it
 * an error. Only this is stored, not the whole result: `_meta` and annotations mean nothing to the
 * model, and a smaller step value stays further from the step size limit.
 */
export interface McpOutcome {
  isError: boolean
  value: ModelValue
}

/**
 * The MCP tool answered with `isError: true`, or its task failed or was cancelled: thrown from the
 * tool's execute, so the model reads `message` as the call's tool error (`{"error": message}`).
 */
export class McpToolError extends Error {
  constructor(
    /** The MCP tool's name. */
    readonly toolName: string,
    message: string,
  ) {
    super(message)
    this.name = 'McpToolError'
  }
}

/** A tools/call result as the SDK's `callTool` returns it (the 2024-10-07 `toolResult` form included). */
type ToolReply = CallToolResult | { toolResult: unknown }

/**
 * The model's view of a result: `structuredContent` when the server sent it (the typed value the tool
 * promised), else the text of a text-only result (blocks joined by a new line), else the content
 * blocks as they are (images, audio, resources: JSON the model reads as is).
 */
export function outcomeOf(reply: ToolReply): McpOutcome {
  if (!('content' in reply)) return { isError: false, value: jsonOf(reply.toolResult) }
  const isError = reply.isError === true
  if (reply.structuredContent !== undefined) return { isError, value: jsonOf(reply.structuredContent) }
  const texts = reply.content.flatMap((block) => (block.type === 'text' ? [block.text] : []))
  return { isError, value: texts.length === reply.content.length ? texts.join('\n') : jsonOf(reply.content) }
}

/** The message of an error outcome: its text as is, other JSON encoded; never empty. */
export function errorMessageOf(outcome: McpOutcome, toolName: string): string {
  const text = typeof outcome.value === 'string' ? outcome.value : JSON.stringify(outcome.value)
  return text.length > 0 ? text : `The MCP tool ${toolName} reported an error without a message.`
}

/** A value that came over the wire (JSON already), typed for the step that stores it. */
function jsonOf(value: unknown): ModelValue {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'object' ? value : null
}
