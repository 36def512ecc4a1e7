/**
 * What a terminal must never get raw from a value someone else chose: controls (C0 with ESC, CR, LF and
 * TAB, DEL, C1), line and paragraph separators, format characters (the bidi controls and marks, zero
 * widths, soft hyphen, BOM, tags), lone surrogates, and the Hangul fillers that print as blanks.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u115f\u1160\u3164\uffa0]/gu
const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

const hex = (code: number) => code.toString(16).padStart(4, '0')

/**
 * A value for one line of a terminal: every character of UNSAFE shown as a visible escape (`\n`,
 * `\u202e`, `\u{e0041}`), so it can neither forge a line, move the cursor nor reorder what is shown.
 * Every print of text a model or caller chose goes through it (or through `jsonText`).
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.codePointAt(0)!
    return SHORT[c] ?? (code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${hex(code)}`)
  })
}

/** UNSAFE but C0: what JSON.stringify (and pino) leave raw in a string. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u115f\u1160\u3164\uffa0]/gu

/** JSON text (a log line too) with UNSAFE_IN_JSON escaped as `\uXXXX` code units: it parses back to the same value. */
export function jsonText(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => Array.from({ length: c.length }, (_, i) => `\\u${hex(c.charCodeAt(i))}`).join(''))
}

function safeStrings(value: unknown): unknown {
  if (typeof value === 'string') return terminalSafe(value)
  if (Array.isArray(value)) return value.map(safeStrings)
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [terminalSafe(k), safeStrings(v)]))
  }
  return value
}

/**
 * A JSON log line for a pretty printer, which decodes JSON escapes and prints what they stand for: every
 * key and string of the line passed through terminalSafe, so the printed text shows escapes, not controls.
 */
export function prettySafeLine(line: string): string {
  try {
    return `${JSON.stringify(safeStrings(JSON.parse(line)))}\n`
  } catch {
    return jsonText(line)
  }
}
