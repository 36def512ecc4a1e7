// `npm run bench -- --against <ref>`: how alternating rounds of both sides become medians, ratios,
// the rounds' spread and a verdict (scripts/bench/againstReport.ts). No timing: figures are given.
import { describe, expect, it } from 'vitest'
import {
  AB_ROWS,
  aggregate,
  formatReport,
  INTERLEAVED_ROWS,
  median,
  type RowSpec,
  type SideRound,
} from '../../scripts/bench/againstReport.js'

const latency: RowSpec = { id: 'p50', figure: 'p50', unit: 'ms', better: 'lower' }
const rate: RowSpec = { id: 'rate', figure: 'calls/s', unit: '/s', better: 'higher' }

/** Rounds from per-round values of each side; null: the side reported an error for that row. */
function rounds(row: string, mine: Array<number | null>, theirs: Array<number | null>): SideRound[] {
  const side = (s: 'this' | 'ref', values: Array<number | null>) =>
    values.map((v, round) => ({ round, side: s, rows: { [row]: v === null ? { error: 'no such API' } : { value: v } } }))
  return [...side('this', mine), ...side('ref', theirs)]
}

describe('bench --against aggregation', () => {
  it('median: the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([])).toBeNull()
  })

  it('a latency row: this/ref of the medians, the per-round ratios as the spread, SLOWER above 1.05x', () => {
    const [r] = aggregate(rounds('p50', [1.2, 1.1, 1.5], [1.0, 1.0, 1.0]), [latency])
    expect(r!.this).toMatchObject({ median: 1.2, min: 1.1, max: 1.5, n: 3 })
    expect(r!.ref.median).toBe(1)
    expect(r!.ratio).toBeCloseTo(1.2)
    expect(r!.roundRatios!.min).toBeCloseTo(1.1)
    expect(r!.roundRatios!.max).toBeCloseTo(1.5)
    expect(r!.slowdown).toBeCloseTo(1.2)
    expect(r!.verdict).toBe('SLOWER')
    expect(r!.slowerRounds).toBe(3)
  })

  it('a rate row: fewer calls/s than the ref is a slowdown of ref/this', () => {
    const [r] = aggregate(rounds('rate', [800, 900, 1000], [1000, 1000, 1000]), [rate])
    expect(r!.ratio).toBeCloseTo(0.9)
    expect(r!.slowdown).toBeCloseTo(1 / 0.9)
    expect(r!.verdict).toBe('SLOWER')
    // round 3 (1000 against 1000) is not slower
    expect(r!.slowerRounds).toBe(2)
    const [faster] = aggregate(rounds('rate', [1200, 1100, 1300], [1000, 1000, 1000]), [rate])
    expect(faster!.verdict).toBe('faster')
  })

  it('within 1.05x either way is the same', () => {
    const [r] = aggregate(rounds('p50', [1.04, 1.05, 0.97], [1, 1, 1]), [latency])
    expect(r!.verdict).toBe('same')
  })

  it('pairs round r of this with round r of the ref, skipping rounds where either side has no value', () => {
    const [r] = aggregate(rounds('p50', [2, null, 3], [1, 1, null]), [latency])
    expect(r!.roundRatios).toEqual({ min: 2, max: 2, n: 1 })
    expect(r!.this.errors).toEqual(['no such API'])
    expect(r!.ref.errors).toEqual(['no such API'])
  })

  it('a row the ref cannot measure is n/a and the report says why', () => {
    const [r] = aggregate(rounds('p50', [1, 1], [null, null]), [latency])
    expect(r!.verdict).toBe('n/a')
    expect(r!.ratio).toBeNull()
    const text = formatReport([r!])
    expect(text).toContain('p50: the ref could not measure it: no such API')
    expect(text).toMatch(/p50 +1\.000 ms \(1\.000–1\.000 ms\) +n\/a/)
  })

  it('a control row (the same code both sides) that moves more than 1.05x marks the run as noisy', () => {
    const control: RowSpec = { id: 'raw-20', figure: 'control', unit: '/s', better: 'higher' }
    const [moved] = aggregate(rounds('raw-20', [700, 800, 600], [1000, 900, 1000]), [control])
    expect(formatReport([moved!])).toContain('the control row raw-20 (the same code on both sides) came out SLOWER')
    const [steady] = aggregate(rounds('raw-20', [1000, 990, 1010], [1000, 1000, 1000]), [control])
    expect(formatReport([steady!])).not.toContain('the control row')
  })

  it('a row a side never reported counts as not reported, not as zero', () => {
    const mine: SideRound[] = [{ round: 0, side: 'this', rows: { p50: { value: 1 } } }]
    const theirs: SideRound[] = [{ round: 0, side: 'ref', rows: {} }]
    const [r] = aggregate([...mine, ...theirs], [latency])
    expect(r!.ref).toMatchObject({ n: 0, median: null, errors: ['not reported (its row driver has no such row)'] })
    expect(r!.verdict).toBe('n/a')
  })

  it('the rows --interleave measures are rows of the report, each block pair a round', () => {
    const specs = AB_ROWS.filter((r) => (INTERLEAVED_ROWS as readonly string[]).includes(r.id))
    expect(specs.map((r) => r.id)).toEqual([...INTERLEAVED_ROWS])
    const pair = (round: number, mine: number, theirs: number): SideRound[] => [
      { round, side: 'this', rows: { 'runTool-20': { value: mine } } },
      { round, side: 'ref', rows: { 'runTool-20': { value: theirs } } },
    ]
    const rounds = [...pair(0, 900, 1000), ...pair(1, 1800, 2000), ...pair(2, 950, 1000)]
    const rate = aggregate(rounds, specs).find((r) => r.id === 'runTool-20')!
    expect(rate.roundRatios).toMatchObject({ n: 3, min: 0.9, max: 0.95 })
    expect(rate.verdict).toBe('SLOWER')
  })
})
