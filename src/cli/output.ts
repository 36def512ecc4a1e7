import type { TimelineItem } from '../timeline/index.js'

/** Colour only on a terminal (and never with NO_COLOR set). */
const useColor = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, dim: 2, bold: 1 } as const
export function paint(color: keyof typeof CODES, text: string): string {
  return useColor ? `\u001b[${CODES[color]}m${text}\u001b[0m` : text
}

const KIND_COLOR: Partial<Record<TimelineItem['kind'], keyof typeof CODES>> = {
  question: 'yellow',
  answer: 'yellow',
  result: 'green',
  settled: 'green',
  error: 'red',
  recovery: 'red',
  step: 'blue',
  attempt: 'blue',
}

/** One timeline line for a terminal: time (UTC), kind, text (escaped: it holds what models and callers chose). */
export function timelineLine(item: TimelineItem): string {
  const at = new Date(item.at).toISOString().slice(11, 23)
  const kind = item.kind.padEnd(9)
  return `${paint('dim', at)}  ${KIND_COLOR[item.kind] ? paint(KIND_COLOR[item.kind]!, kind) : kind} ${terminalSafe(item.text)}`
}

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
 * Every print of text a model or caller chose goes through it (or through `jsonLine`).
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

/** A value as one line of JSON for a terminal (see jsonText). */
export function jsonLine(value: unknown): string {
  return jsonText(JSON.stringify(value))
}

/** A plain text table: a header row and rows (escaped, then padded to the widths they print at). */
export function table(header: string[], rows: string[][]): string {
  const safe = rows.map((r) => r.map(terminalSafe))
  const widths = header.map((h, i) => Math.max(h.length, ...safe.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [paint('bold', line(header)), ...safe.map(line)].join('\n')
}

export function print(text: string): void {
  process.stdout.write(`${text}\n`)
}
