// What tools/list shows of a durable tool: its schemas as JSON Schema 2020-12 (MCP's default dialect
// since 2025-11-25), and that it may run as a task.
import { convertSchemaToJsonSchema, type SchemaInput } from '@tanstack/ai'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { toolOf } from '../core/index.js'
import type { Harness } from '../harness/defineHarness.js'
import { isObject } from './results.js'

type JsonObject = Record<string, unknown>

/** A zod 4 schema (of any copy of zod: it carries `_zod`), which zod itself renders as 2020-12 with `$defs`. */
function isZod(schema: SchemaInput): schema is z.ZodType {
  return isObject(schema) && '_zod' in schema
}

/** A tool schema as JSON Schema: zod's own rendering of what the tool takes in, else TanStack's converter. */
function jsonSchemaOf(schema: SchemaInput | undefined): JsonObject | undefined {
  if (!schema) return undefined
  const converted: unknown = isZod(schema) ? z.toJSONSchema(schema, { io: 'input' }) : convertSchemaToJsonSchema(schema)
  return isObject(converted) ? converted : undefined
}

/** The served tool as tools/list lists it; MCP requires object schemas, so a tool without one takes `{ type: 'object' }`. */
export function describeTool(harness: Harness, name: string): Tool {
  const tool = toolOf(harness, name)!
  const input = jsonSchemaOf(tool.inputSchema)
  const output = jsonSchemaOf(tool.outputSchema)
  return {
    name,
    ...(tool.description ? { description: tool.description } : {}),
    inputSchema: { ...input, type: 'object' },
    ...(output?.type === 'object' ? { outputSchema: { ...output, type: 'object' } } : {}),
    execution: { taskSupport: 'optional' },
  }
}
