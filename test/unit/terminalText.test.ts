import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { jsonText, prettySafeLine, terminalSafe } from '../../src/terminalText.js'

const hostile = 'ok\u001b[2J\u202eevil\u009b31m\nforged line'

describe('terminal text', () => {
  it('terminalSafe shows every control, bidi mark and line break as a visible escape', () => {
    expect(terminalSafe(hostile)).toBe('ok\\u001b[2J\\u202eevil\\u009b31m\\nforged line')
  })

  it('jsonText escapes what JSON.stringify leaves raw and parses back to the same value', () => {
    const line = jsonText(JSON.stringify({ msg: hostile }))
    expect(line).not.toMatch(/[\u007f-\u009f\u202e]/)
    expect(JSON.parse(line)).toEqual({ msg: hostile })
  })

  it('prettySafeLine makes keys and strings visible after a pretty printer decodes the JSON', () => {
    const parsed = JSON.parse(prettySafeLine(JSON.stringify({ msg: hostile, [`k\u001b`]: [hostile], n: 1 })))
    expect(parsed).toEqual({ msg: terminalSafe(hostile), 'k\\u001b': [terminalSafe(hostile)], n: 1 })
    expect(prettySafeLine('not json \u202e')).toBe('not json \\u202e')
  })

  it("createLogger's JSON lines carry no raw bidi control or C1 control, whoever created the logger", () => {
    const script = `import { createLogger } from './src/logger.ts'; createLogger().info({ input: ${JSON.stringify(hostile)} }, 'a line')`
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, LOG_JSON: '1' },
    })
    expect([...out.trimEnd()].filter((c) => /[\p{Cc}\p{Cf}]/u.test(c))).toEqual([])
    expect(JSON.parse(out).input).toBe(hostile)
  })
})
