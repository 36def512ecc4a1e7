// How a durable call's kept result reads as an MCP CallToolResult, and how a step.ask's JSON Schema
// becomes an elicitation form and its answer the ask's value (docs/mcp.md "Results and questions").
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { RecordOf } from '../log/index.js'

/**
 * The CallToolResult of a landed call: a tool error as `isError: true` with its message; a value that
 * already is a CallToolResult (`{ content: [...] }`) as it is; a string as one text item; any other
 * JSON value as its JSON text, and, for an object, as `structuredContent` too.
 */
export function toolResultOf(record: RecordOf<'harness.tool.result'>): CallToolResult {
  if (record.error) return { content: [{ type: 'text', text: record.error.message }], isError: true }
  const value = record.result
  const asIs = CallToolResultSchema.safeParse(value)
  if (asIs.success && typeof value === 'object' && value !== null && 'content' in value) return asIs.data
  if (typeof value === 'string') return { content: [{ type: 'text', text: value }] }
  const text = value === undefined ? '' : JSON.stringify(value)
  return { content: [{ type: 'text', text }], ...(isObject(value) ? { structuredContent: value } : {}) }
}

type Schema = Record<string, unknown>

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A property an elicitation form may hold: a string, number, integer or boolean, or an array of enum strings. */
function isFormField(schema: unknown): boolean {
  if (!isObject(schema)) return false
  if (['string', 'number', 'integer', 'boolean'].includes(schema.type as string)) return true
  return schema.type === 'array' && isObject(schema.items) && (Array.isArray(schema.items.enum) || Array.isArray(schema.items.anyOf))
}

/**
 * The form an ask's schema is asked with. MCP forms are flat objects of primitive fields: an object
 * schema of such fields is the form itself; any other schema is the one field `value` of a form,
 * unwrapped again from the answer (`wrapped`).
 */
export function elicitationForm(schema: unknown): { requestedSchema: Schema; wrapped: boolean } {
  if (isObject(schema) && schema.type === 'object' && isObject(schema.properties) && Object.values(schema.properties).every(isFormField))
    return { requestedSchema: schema, wrapped: false }
  return { requestedSchema: { type: 'object', properties: { value: isObject(schema) ? schema : {} }, required: ['value'] }, wrapped: true }
}

/** The ask's value from an accepted form's content. */
export function answerOf(schema: unknown, content: Record<string, unknown> | undefined): unknown {
  const form = content ?? {}
  return elicitationForm(schema).wrapped ? form.value : form
}
