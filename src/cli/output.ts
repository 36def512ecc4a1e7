import { jsonText, terminalSafe } from '../terminalText.js'
import type { TimelineItem } from '../timeline/items.js'

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
