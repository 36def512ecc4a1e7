import { EventType, type StreamChunk } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { Timeline } from '../../src/timeline/items.js'

const at = 1_700_000_000_000
const lines = (events: StreamChunk[]) => {
  const timeline = new Timeline()
  return events.flatMap((event, i) => timeline.push({ cursor: `${at}-${i}`, event }))
}
const custom = (name: string, value: unknown): StreamChunk => ({ type: EventType.CUSTOM, name, value })

describe('Timeline', () => {
  it('shows each harness record by its type, and skips those other events show', () => {
    const records = [
      { type: 'harness.tool.started', toolCallId: 'c1', name: 'charge', attempt: 2, replay: 'safe', reason: 'rerun' },
      { type: 'harness.tool.sleep', toolCallId: 'c1', name: 'wait', wakeAt: at },
      { type: 'harness.turn.paused', inputId: 'in-1', error: { message: 'rate limited' }, at },
      { type: 'harness.tool.result', toolCallId: 'c1', name: 'charge', result: 1 },
      { type: 'harness.turn.rerun', inputId: 'in-1', rerunId: 'r-1', at, calls: ['c1', 'c2'], again: ['c2'], principal: 'ops' },
    ]
    expect(lines(records.map((r) => custom(r.type, r))).map(({ kind, text }) => ({ kind, text }))).toEqual([
      { kind: 'attempt', text: 'charge c1 attempt 2 (rerun, replay safe)' },
      { kind: 'sleep', text: `c1 sleeps (wait) until ${new Date(at).toISOString()}` },
      { kind: 'park', text: 'turn in-1 paused: rate limited' },
      // R19: the calls the operator named to run again although kept
      { kind: 'record', text: 'turn in-1 rerun (r-1) by ops; runs again: c1, c2 (named: c2)' },
    ])
  })

  it("shows a tool's event under a harness record's name but not of its shape as a plain record line", () => {
    const forged = { type: 'harness.tool.sleep', toolCallId: 'c1', name: 'wait', wakeAt: 'soon' }
    expect(lines([custom('harness.tool.sleep', forged), custom('progress', { pct: 5 })]).map(({ kind, text }) => ({ kind, text }))).toEqual(
      [
        { kind: 'record', text: `harness.tool.sleep ${JSON.stringify(forged)}` },
        { kind: 'record', text: 'record progress: {"pct":5}' },
      ],
    )
  })
})
