// foldTurn: a turn's state from its log entries, laid out by hand (the integration tests in
// test/integration/turns.test.ts, finishCycles.test.ts and rerun.test.ts make these logs over workers).
import { describe, expect, it } from 'vitest'
import type { LogEntry, LogRecord } from '../../src/log/index.js'
import { foldTurn } from '../../src/turn/fold.js'

let seq = 0
const entry = (record: Record<string, unknown>): LogEntry => ({ id: `1-${seq++}`, record: record as LogRecord })
const input = (inputId: string) => entry({ type: 'harness.input', inputId, text: inputId, at: 1 })
const response = (inputId: string, calls: string[], text?: string) =>
  entry({
    type: 'harness.model.response',
    inputId,
    toolCalls: calls.map((toolCallId) => ({ toolCallId, name: 'tool', input: {} })),
    ...(text ? { text } : {}),
  })
const result = (toolCallId: string, error?: string) =>
  entry({ type: 'harness.tool.result', toolCallId, name: 'tool', ...(error ? { error: { code: 'x', message: error } } : { result: 1 }) })
const error = { code: 'model_error', message: 'overloaded' }
const pendingIds = (entries: LogEntry[], inputId = 't') => foldTurn(entries, inputId).pending.map((c) => c.toolCallId)

describe('foldTurn', () => {
  it('reads from the turn input on, and only its own records and its own calls’ results', () => {
    const log = [
      response('t', ['before']),
      input('other'),
      input('t'),
      response('other', ['o1']),
      response('t', ['a', 'b']),
      result('o1'),
      result('a'),
    ]
    const fold = foldTurn(log, 't')
    expect(fold.input?.record).toMatchObject({ inputId: 't' })
    expect(fold.responses).toHaveLength(1)
    expect([...fold.results.keys()]).toEqual(['a'])
    expect(fold.pending.map((c) => c.toolCallId)).toEqual(['b'])
  })

  it('without its input, the fold is empty', () => {
    const fold = foldTurn([response('t', ['a'])], 't')
    expect(fold.input).toBeUndefined()
    expect(fold.responses).toEqual([])
    expect(fold.pending).toEqual([])
  })

  it('pending: the calls of the last response only, without a result', () => {
    expect(pendingIds([input('t'), response('t', ['a']), response('t', ['b', 'c']), result('c')])).toEqual(['b'])
    expect(pendingIds([input('t'), response('t', [], 'done')])).toEqual([])
  })

  it("a model call's retries count from the last response; a resume starts them afresh and ends the pause", () => {
    const retry = (attempt: number) => entry({ type: 'harness.turn.retry', inputId: 't', attempt, error, nextAt: 9 })
    const paused = entry({ type: 'harness.turn.paused', inputId: 't', error, at: 2 })
    let fold = foldTurn([input('t'), retry(1), response('t', ['a']), retry(1), retry(2)], 't')
    expect(fold.retries).toBe(2)
    expect(fold.retry).toMatchObject({ attempt: 2 })
    fold = foldTurn([input('t'), retry(1), paused], 't')
    expect(fold.paused).toBeDefined()
    fold = foldTurn([input('t'), retry(1), paused, entry({ type: 'harness.turn.resumed', inputId: 't', at: 3 })], 't')
    expect(fold.paused).toBeUndefined()
    expect(fold.retries).toBe(0)
    expect(fold.turnRecords).toBe(3)
  })

  it('R19: a rerun opens the turn again and drops only the failed results it names; other results stay kept', () => {
    const log = [
      input('t'),
      response('t', ['kept', 'failed']),
      result('kept'),
      result('failed', 'boom'),
      entry({ type: 'harness.input.settled', inputId: 't', outcome: 'failed' }),
    ]
    expect(foldTurn(log, 't').settled).toBeDefined()
    const rerun = entry({ type: 'harness.turn.rerun', inputId: 't', rerunId: 'r1', at: 5, calls: ['failed'] })
    const fold = foldTurn([...log, rerun], 't')
    expect(fold.settled).toBeUndefined()
    expect([...fold.results.keys()]).toEqual(['kept'])
    expect(fold.pending.map((c) => c.toolCallId)).toEqual(['failed'])
  })

  it('beforeFinish: a cycle after the last response continues the turn; a later response ends that', () => {
    const finish = (cycle: number, responses: number) =>
      entry({ type: 'harness.turn.finish', inputId: 't', cycle, responses, messages: [{ role: 'user', content: 'go on' }] })
    let fold = foldTurn([input('t'), response('t', [], 'A'), finish(1, 1)], 't')
    expect(fold).toMatchObject({ finishCycles: 1, continued: true })
    fold = foldTurn([input('t'), response('t', [], 'A'), finish(1, 1), response('t', [], 'B')], 't')
    expect(fold).toMatchObject({ finishCycles: 1, continued: false })
  })
})
