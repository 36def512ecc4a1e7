import { createHash } from 'node:crypto'
import { convertSchemaToJsonSchema, type AnyServerTool, type SchemaInput } from '@tanstack/ai'

/** JSON text with object keys sorted, so two equal schemas give one text whatever their key order. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value && typeof value === 'object')
    return `{${Object.entries(value)
      // the order of sort()'s default (UTF-16 code units), on the keys
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, field]) => `${JSON.stringify(key)}:${canonical(field)}`)
      .join(',')}}`
  return JSON.stringify(value) ?? 'null'
}

/** A tool's schema as JSON Schema, or null (none, or one JSON Schema cannot express). */
function jsonSchemaOf(schema: SchemaInput | undefined): unknown {
  if (!schema) return null
  try {
    return convertSchemaToJsonSchema(schema) ?? null
  } catch {
    return null
  }
}

/**
 * The version a harness gets when `defineHarness({ version })` says nothing: a stable hash of what a
 * parked call depends on and can be seen without running code: each tool's name, input schema, output
 * schema and whether it asks for approval (the approval's answer schema is the harness's own). The
 * `step.ask` schemas live in the tools' code: `harness check-deploy` checks them against open questions.
 */
export function defaultVersion(tools: ReadonlyArray<AnyServerTool>): string {
  const shape = [...tools]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((tool) => ({
      name: tool.name,
      input: jsonSchemaOf(tool.inputSchema),
      output: jsonSchemaOf(tool.outputSchema),
      approval: tool.needsApproval === true,
    }))
  return `h-${createHash('sha256').update(canonical(shape)).digest('hex').slice(0, 12)}`
}
