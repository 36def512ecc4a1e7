// `npm run bench -- --against <ref>`: the rows both sides measure, and the aggregation of their
// alternating rounds into medians, ratios to the ref, the rounds' spread and a verdict. Pure: the
// parent (against.ts) feeds it the JSON its side processes (againstSide.ts) print.

type Better = 'lower' | 'higher'

export interface RowSpec {
  id: string
  figure: string
  unit: 'ms' | '/s' | 'µs' | 'commands'
  better: Better
}

export const AB_ROWS: readonly RowSpec[] = [
  { id: 'runTool-p50', figure: 'runTool, 3 steps, one at a time: p50', unit: 'ms', better: 'lower' },
  { id: 'runTool-20', figure: 'runTool (3 steps) calls/s, 20 callers', unit: '/s', better: 'higher' },
  { id: 'cpu-20', figure: 'own CPU (Node + Redis) per runTool call, 20 callers', unit: 'µs', better: 'lower' },
  { id: 'commands', figure: 'Redis commands per runTool call (3 steps, MONITOR)', unit: 'commands', better: 'lower' },
  { id: 'lua-calls', figure: 'Redis calls inside Lua scripts per runTool call (MONITOR)', unit: 'commands', better: 'lower' },
  { id: 'drain-10', figure: '1-step calls/s drained, concurrency 10', unit: '/s', better: 'higher' },
  { id: 'drain-50', figure: '1-step calls/s drained, concurrency 50', unit: '/s', better: 'higher' },
  { id: 'cpu-drain-10', figure: 'own CPU (Node + Redis) per drained call, concurrency 10', unit: 'µs', better: 'lower' },
  { id: 'cpu-drain-50', figure: 'own CPU (Node + Redis) per drained call, concurrency 50', unit: 'µs', better: 'lower' },
  { id: 'floor-10', figure: 'floor (bare worker, only the scripts a call needs) calls/s, concurrency 10', unit: '/s', better: 'higher' },
  { id: 'floor-50', figure: 'floor (bare worker, only the scripts a call needs) calls/s, concurrency 50', unit: '/s', better: 'higher' },
  { id: 'cpu-floor-10', figure: 'own CPU (Node + Redis) per floor call, concurrency 10', unit: 'µs', better: 'lower' },
  { id: 'raw-20', figure: 'control: raw BullMQ round trips/s, 20 callers (same code both sides)', unit: '/s', better: 'higher' },
  {
    id: 'cpu-raw-20',
    figure: 'control: own CPU (Node + Redis) per raw BullMQ round trip, 20 callers (same code both sides)',
    unit: 'µs',
    better: 'lower',
  },
]

/** The rows `--interleave` measures (againstInterleaved.ts). */
export const INTERLEAVED_ROWS = ['runTool-p50', 'runTool-20', 'cpu-20', 'drain-50', 'cpu-drain-50'] as const

/** The row whose code is the same on both sides: its ratio is the run's noise. */
const CONTROL = 'raw-20'

/** What one side's process measured in one round: a value a row, or why it could not. */
export type RowResult = { value: number } | { error: string }

export interface SideRound {
  round: number
  side: 'this' | 'ref'
  rows: Record<string, RowResult>
}

interface SideSummary {
  median: number | null
  min: number | null
  max: number | null
  /** Rounds that gave a value. */
  n: number
  /** Distinct reasons the rounds without a value gave. */
  errors: string[]
}

export interface RowReport extends RowSpec {
  this: SideSummary
  ref: SideSummary
  /** this / ref of the medians. */
  ratio: number | null
  /** min and max of this / ref over the rounds where both sides gave a value. */
  roundRatios: { min: number; max: number; n: number } | null
  /** How many times the cost (time, CPU, commands; 1 / rate) this tree pays against the ref, from the medians. */
  slowdown: number | null
  /** Rounds whose own slowdown exceeds the threshold. */
  slowerRounds: number
  verdict: 'SLOWER' | 'faster' | 'same' | 'n/a'
}

export function median(values: number[]): number | null {
  if (values.length === 0) return null
  const s = [...values].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

const valueOf = (r: RowResult | undefined) => (r && 'value' in r && Number.isFinite(r.value) ? r.value : null)

function summarizeSide(rounds: SideRound[], id: string): SideSummary {
  const values = rounds.map((r) => valueOf(r.rows[id])).filter((v): v is number => v !== null)
  const errors = [
    ...new Set(
      rounds
        .map((r) => r.rows[id])
        .flatMap((r) => (r && 'error' in r ? [r.error] : r ? [] : ['not reported (its row driver has no such row)'])),
    ),
  ]
  return {
    median: median(values),
    min: values.length ? Math.min(...values) : null,
    max: values.length ? Math.max(...values) : null,
    n: values.length,
    errors,
  }
}

/** Slowdown of a this/ref ratio: the ratio itself for a cost, its inverse for a rate. */
const slowdownOf = (ratio: number, better: Better) => (better === 'lower' ? ratio : 1 / ratio)

/**
 * One report a row: each side's median and range over its rounds, this/ref of the medians, the
 * spread of the per-round ratios (round r of this against round r of the ref, measured next to each
 * other), and SLOWER when the median slowdown exceeds `threshold`.
 */
export function aggregate(rounds: SideRound[], rows: readonly RowSpec[], threshold = 1.05): RowReport[] {
  const mine = rounds.filter((r) => r.side === 'this')
  const theirs = rounds.filter((r) => r.side === 'ref')
  return rows.map((spec) => {
    const a = summarizeSide(mine, spec.id)
    const b = summarizeSide(theirs, spec.id)
    const perRound: number[] = []
    for (const m of mine) {
      const x = valueOf(m.rows[spec.id])
      const y = valueOf(theirs.find((t) => t.round === m.round)?.rows[spec.id])
      if (x !== null && y !== null && y !== 0) perRound.push(x / y)
    }
    const ratio = a.median !== null && b.median !== null && b.median !== 0 ? a.median / b.median : null
    const slowdown = ratio === null || ratio === 0 ? null : slowdownOf(ratio, spec.better)
    const verdict = slowdown === null ? 'n/a' : slowdown > threshold ? 'SLOWER' : slowdown < 1 / threshold ? 'faster' : 'same'
    return {
      ...spec,
      this: a,
      ref: b,
      ratio,
      roundRatios: perRound.length ? { min: Math.min(...perRound), max: Math.max(...perRound), n: perRound.length } : null,
      slowdown,
      slowerRounds: perRound.filter((r) => r > 0 && slowdownOf(r, spec.better) > threshold).length,
      verdict,
    }
  })
}

function figure(v: number | null, unit: RowSpec['unit']): string {
  if (v === null) return '—'
  if (unit === 'ms') return `${v.toFixed(3)} ms`
  if (unit === 'commands') return `${Math.round(v * 100) / 100}`
  return `${Math.round(v).toLocaleString('en-US')}${unit === '/s' ? '/s' : ' µs'}`
}

const range = (s: SideSummary, unit: RowSpec['unit']) =>
  s.n === 0 ? '' : s.n === 1 ? '' : ` (${figure(s.min, unit).replace(/ .*|\/s/, '')}–${figure(s.max, unit)})`

/** The table --against prints: one line a row, then the reasons for rows a side could not measure. */
export function formatReport(reports: RowReport[], threshold = 1.05): string {
  const header = ['row', 'this tree: median (min–max)', 'ref: median (min–max)', 'this/ref', 'rounds this/ref', 'verdict']
  const side = (s: SideSummary, unit: RowSpec['unit']) => (s.n === 0 ? 'n/a' : `${figure(s.median, unit)}${range(s, unit)}`)
  const body = reports.map((r) => {
    const rounds = r.roundRatios ? `${r.roundRatios.min.toFixed(2)}–${r.roundRatios.max.toFixed(2)} (${r.roundRatios.n})` : '—'
    const verdict =
      r.verdict === 'SLOWER'
        ? `SLOWER ${r.slowdown!.toFixed(2)}x (${r.slowerRounds}/${r.roundRatios?.n ?? 0} rounds)`
        : r.verdict === 'n/a'
          ? 'n/a'
          : `${r.verdict} (${r.slowdown!.toFixed(2)}x cost)`
    return [
      `${r.id}  ${r.figure}`,
      side(r.this, r.unit),
      side(r.ref, r.unit),
      r.ratio === null ? '—' : `${r.ratio.toFixed(2)}x`,
      rounds,
      verdict,
    ]
  })
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  const control = reports.find((r) => r.id === CONTROL)
  const noisy =
    control && control.verdict !== 'same' && control.verdict !== 'n/a'
      ? [
          `the control row ${CONTROL} (the same code on both sides) came out ${control.verdict} ${control.slowdown!.toFixed(2)}x: ` +
            'this run is noisier than 1.05x; trust only load-independent rows (commands, lua-calls) and differences well beyond the control',
        ]
      : []
  const notes = reports.flatMap((r) => [
    ...r.this.errors.map((e) => `${r.id}: this tree could not measure it: ${e}`),
    ...r.ref.errors.map((e) => `${r.id}: the ref could not measure it: ${e}`),
  ])
  return [
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...body.map(line),
    '',
    `this/ref: medians; "rounds": the lowest and highest ratio of a round's pair (both measured next to each other). ` +
      `verdict: the cost this tree pays against the ref (time, CPU and commands as they are, 1 / rate for calls/s); SLOWER above ${threshold}x.`,
    ...noisy,
    ...notes,
  ].join('\n')
}
