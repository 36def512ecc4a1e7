import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'

type Html = HtmlEscapedString | Promise<HtmlEscapedString>

interface JsonSchema {
  type?: string | string[]
  title?: string
  description?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  enum?: unknown[]
  const?: unknown
  default?: unknown
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
}

/**
 * The fields of a question's answer, generated from its JSON Schema: an object is a fieldset of its
 * properties, an enum a select, a boolean a checkbox, a number or string an input (with the schema's
 * bounds), anything else a JSON text area. Each field names its place in the answer (`data-path`, a
 * JSON array) and how to read it (`data-type`); the page's script builds the answer from them and
 * the server validates it against the same schema. Every name and text is escaped.
 */
export function schemaFields(schema: unknown, formId: string): Html {
  return field(asSchema(schema), [], formId, true)
}

function asSchema(value: unknown): JsonSchema {
  return typeof value === 'object' && value !== null ? (value as JsonSchema) : {}
}

function typeOf(schema: JsonSchema): string | undefined {
  const types = Array.isArray(schema.type) ? schema.type.filter((t) => t !== 'null') : [schema.type]
  return types.length === 1 ? types[0] : undefined
}

function field(schema: JsonSchema, path: string[], formId: string, required: boolean): Html {
  const id = `${formId}-${path.join('-').replace(/[^A-Za-z0-9_-]/g, '_') || 'value'}`
  const label = schema.title ?? path.at(-1) ?? 'answer'
  const hint = schema.description ? html`<small class="hint">${schema.description}</small>` : ''
  const at = JSON.stringify(path)
  const type = typeOf(schema)
  if (type === 'object' && schema.properties) {
    const need = new Set(schema.required ?? [])
    const inner = Object.entries(schema.properties).map(([name, sub]) => field(asSchema(sub), [...path, name], formId, need.has(name)))
    return path.length === 0
      ? html`${inner}`
      : html`<fieldset>
          <legend>${label}</legend>
          ${hint}${inner}
        </fieldset>`
  }
  if (schema.enum) {
    const options = schema.enum.map((v) => html`<option value="${JSON.stringify(v)}">${String(v)}</option>`)
    return html`<label for="${id}">${label}${required ? ' *' : ''}</label>${hint}
      <select id="${id}" name="${id}" data-path="${at}" data-type="json" ${required ? 'required' : ''}>
        ${required ? '' : html`<option value="">(none)</option>`}${options}
      </select>`
  }
  if (type === 'boolean')
    return html`<label class="check"><input type="checkbox" id="${id}" name="${id}" data-path="${at}" data-type="boolean" /> ${label}</label
      >${hint}`
  if (type === 'number' || type === 'integer') {
    const bounds = html`${schema.minimum !== undefined ? html` min="${schema.minimum}"` : ''}${schema.maximum !== undefined ? html` max="${schema.maximum}"` : ''}`
    return html`<label for="${id}">${label}${required ? ' *' : ''}</label>${hint}
      <input
        type="number"
        id="${id}"
        name="${id}"
        step="${type === 'integer' ? '1' : 'any'}"
        ${bounds}
        data-path="${at}"
        data-type="number"
        ${required ? 'required' : ''}
      />`
  }
  if (type === 'string') {
    const bounds = html`${schema.minLength !== undefined ? html` minlength="${schema.minLength}"` : ''}${schema.maxLength !== undefined ? html` maxlength="${schema.maxLength}"` : ''}`
    return html`<label for="${id}">${label}${required ? ' *' : ''}</label>${hint}
      <input type="text" id="${id}" name="${id}" ${bounds} data-path="${at}" data-type="string" ${required ? 'required' : ''} />`
  }
  return html`<label for="${id}">${label} (JSON)${required ? ' *' : ''}</label>${hint}
    <textarea id="${id}" name="${id}" rows="3" data-path="${at}" data-type="json" ${required ? 'required' : ''}></textarea>`
}
