// nextTurnMove: a turn's next move from its fold, with its bounds (R15), without Redis or BullMQ (the
// turn job, src/turn/turnJob.ts, makes the move; test/integration/turns.test.ts runs it over workers).
import { describe, expect, it } from 'vitest'
import type { LogEntry, LogRecord } from '../../src/log/index.js'
import { foldTurn } from '../../src/turn/fold.js'
import { nextTurnMove, type TurnBounds } from '../../src/turn/nextMove.js'

let seq = 0
const entry = (record: Record<string, unknown>): LogEntry => ({ id: `1-${seq++}`, record: record as LogRecord })
const input = entry({ type: 'harness.input', inputId: 't', text: 'hi', at: 1_000 })
const response = (calls: string[], text?: string) =>
  entry({
    type: 'harness.model.response',
    inputId: 't',
    toolCalls: calls.map((toolCallId) => ({ toolCallId, name: 'tool', input: {} })),
    ...(text ? { text } : {}),
  })
const result = (toolCallId: string) => entry({ type: 'harness.tool.result', toolCallId, name: 'tool', result: 1 })
const bounds: TurnBounds = { timeoutMs: undefined, maxAttempts: 3, maxModelCalls: 10, crashes: 0, attemptsMade: 0, now: 2_000 }
const moveOf = (entries: LogEntry[], over: Partial<TurnBounds> = {}, unseenJoined: string[] = []) =>
  nextTurnMove(foldTurn(entries, 't'), { unseenJoined }, { ...bounds, ...over })

describe('nextTurnMove', () => {
  it('a new turn calls the model, within what is left of its timeout', () => {
    expect(moveOf([input])).toEqual({ move: 'model', remaining: Infinity })
    expect(moveOf([input], { timeoutMs: 5_000 })).toEqual({ move: 'model', remaining: 4_000 })
  })

  it('R15: past timeoutMs the turn fails with timeout, before anything else', () => {
    const move = moveOf([input, response([], 'done')], { timeoutMs: 1_000 })
    expect(move).toMatchObject({ move: 'fail', failure: { outcome: 'failed', error: { code: 'timeout' } } })
  })

  it('calls without a result are enqueued; with all results in, the model is called again', () => {
    expect(moveOf([input, response(['a', 'b']), result('a')])).toMatchObject({ move: 'enqueue', calls: [{ toolCallId: 'b' }] })
    expect(moveOf([input, response(['a']), result('a')])).toMatchObject({ move: 'model' })
  })

  it('an answer finishes the turn, unless a joined input is unseen or a beforeFinish cycle follows it', () => {
    const answered = [input, response([], 'done')]
    expect(moveOf(answered)).toMatchObject({ move: 'finish', last: { text: 'done' } })
    expect(moveOf(answered, {}, ['joined'])).toMatchObject({ move: 'model' })
    const cycle = entry({ type: 'harness.turn.finish', inputId: 't', cycle: 1, responses: 1, messages: [] })
    expect(moveOf([...answered, cycle])).toMatchObject({ move: 'model' })
  })

  it('R15: crashes count as attempts: at maxAttempts the turn fails attempts_exhausted; an answer still finishes', () => {
    const open = [input, response(['a']), result('a')]
    expect(moveOf(open, { crashes: 1, attemptsMade: 1 })).toMatchObject({ move: 'model' })
    expect(moveOf(open, { crashes: 2, attemptsMade: 1 })).toMatchObject({
      move: 'fail',
      failure: { error: { code: 'attempts_exhausted' } },
    })
    // failed attempts alone are BullMQ's to count (the job fails at maxAttempts)
    expect(moveOf(open, { crashes: 0, attemptsMade: 5 })).toMatchObject({ move: 'model' })
    expect(moveOf([input, response([], 'done')], { crashes: 3 })).toMatchObject({ move: 'finish' })
  })

  it('R15: at maxModelCalls responses the turn fails max_model_calls instead of calling the model', () => {
    const log = [input, response(['a']), result('a'), response(['b']), result('b')]
    expect(moveOf(log, { maxModelCalls: 2 })).toMatchObject({ move: 'fail', failure: { error: { code: 'max_model_calls' } } })
    expect(moveOf(log, { maxModelCalls: 3 })).toMatchObject({ move: 'model' })
  })
})
