// The dashboard's answer forms, generated from a question's JSON Schema: the field each schema part
// becomes, and names, titles and enum values from the schema escaped like any log value.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { schemaFields } from '../../src/dashboard/form.js'

const render = async (schema: unknown) => String(await schemaFields(schema, 'f')).replace(/\s+/g, ' ')

describe('answer forms from JSON Schema', () => {
  it('an object becomes its fields: enum → select, boolean → checkbox, integer → number input with bounds, string, nested object, JSON for the rest', async () => {
    const schema = z.toJSONSchema(
      z.object({
        region: z.enum(['eu', 'us']),
        canary: z.boolean(),
        replicas: z.number().int().min(1).max(9),
        note: z.string().max(20).optional(),
        owner: z.object({ team: z.string() }),
        tags: z.array(z.string()),
      }),
    )
    const html = await render(schema)
    expect(html).toMatch(/<select id="f-region"[^>]*data-path="\[&quot;region&quot;\]" data-type="json" required/)
    expect(html).toContain('<option value="&quot;eu&quot;">eu</option>')
    expect(html).toMatch(/<input type="checkbox" id="f-canary"[^>]*data-type="boolean"/)
    expect(html).toMatch(/<input type="number" id="f-replicas" name="f-replicas" step="1" min="1" max="9"[^>]*required/)
    expect(html).toMatch(
      /<input type="text" id="f-note" name="f-note" maxlength="20" data-path="\[&quot;note&quot;\]" data-type="string" \/>/,
    )
    expect(html).toMatch(/<fieldset> <legend>owner<\/legend>.*data-path="\[&quot;owner&quot;,&quot;team&quot;\]"/s)
    expect(html).toMatch(/<textarea id="f-tags"[^>]*data-type="json" required>/)
  })

  it('names, titles, descriptions and enum values are escaped', async () => {
    const html = await render({
      type: 'object',
      properties: {
        '"><img src=x onerror=alert(1)>': { type: 'string', description: '<script>alert(2)</script>' },
        pick: { enum: ['<b>bold</b>'] },
      },
    })
    expect(html).not.toContain('<img')
    expect(html).not.toContain('<script>')
    expect(html).not.toContain('<b>')
    expect(html).toContain('&lt;script&gt;alert(2)&lt;/script&gt;')
  })

  it('a schema that is not an object is one JSON field for the whole answer', async () => {
    expect(await render({ type: 'array', items: { type: 'number' } })).toMatch(
      /<textarea id="f-value"[^>]*data-path="\[\]" data-type="json" required>/,
    )
  })
})
