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

/** One timeline line for a terminal: time (UTC), kind, text. Control characters from the log are shown escaped. */
export function timelineLine(item: TimelineItem): string {
  const at = new Date(item.at).toISOString().slice(11, 23)
  const kind = item.kind.padEnd(9)
  return `${paint('dim', at)}  ${KIND_COLOR[item.kind] ? paint(KIND_COLOR[item.kind]!, kind) : kind} ${printable(item.text)}`
}

/** Log values never reach the terminal as control sequences. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** A plain text table: a header row and rows, columns padded. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [paint('bold', line(header)), ...rows.map((r) => line(r.map(printable)))].join('\n')
}

export function print(text: string): void {
  process.stdout.write(`${text}\n`)
}
