// turnView: what a model call is shown, from a conversation laid out by hand (the integration tests in
// test/integration/turns.test.ts make these logs over worker processes).
import { describe, expect, it } from 'vitest'
import type { LogEntry, LogRecord } from '../../src/log/index.js'
import { turnView } from '../../src/turn/view.js'

let seq = 0
const entry = (record: Record<string, unknown>): LogEntry => ({ id: `1-${seq++}`, record: record as LogRecord })
const input = (inputId: string) => entry({ type: 'harness.input', inputId, text: inputId, at: 1 })
const answer = (inputId: string, text: string, joined?: string[]) =>
  entry({ type: 'harness.model.response', inputId, text, toolCalls: [], ...(joined ? { joined } : {}) })
const settled = (inputId: string, outcome: string) => entry({ type: 'harness.input.settled', inputId, outcome })
const shown = (entries: LogEntry[]) =>
  entries.map(({ record }) =>
    'text' in record ? `${record.type === 'harness.input' ? 'user' : 'model'}:${String(record.text)}` : record.type,
  )

describe('turnView', () => {
  it('R18: an aborted input no model call saw is left out; one a model call saw stays', () => {
    const log = [
      input('a'),
      answer('a', 'A'),
      settled('a', 'aborted'), // answered, then aborted: the model saw it
      input('b'),
      settled('b', 'aborted'), // aborted while waiting in line
      input('c'),
    ]
    expect(shown(turnView(log, 'c', []).entries)).toEqual(['user:a', 'model:A', 'user:c'])
  })

  it('a turn retried with nothing logged yet sees only what came before its input, not inputs after it', () => {
    const log = [input('first'), input('second'), settled('second', 'aborted'), input('third')]
    expect(shown(turnView(log, 'first', []).entries)).toEqual(['user:first'])
  })

  it('a queued turn sees the turn before it whole, after that turn ran past its input', () => {
    const log = [input('a'), input('b'), answer('a', 'A'), settled('a', 'completed')]
    expect(shown(turnView(log, 'b', []).entries)).toEqual(['user:a', 'model:A', 'user:b'])
  })

  it('a joined input logged during a model call that did not see it comes after that answer, and is unseen', () => {
    const log = [input('host'), input('late'), answer('host', 'first answer', [])]
    const view = turnView(log, 'host', ['late'])
    expect(shown(view.entries)).toEqual(['user:host', 'model:first answer', 'user:late'])
    expect(view.unseenJoined).toEqual(['late'])
  })

  it('a response that names the joined inputs it was shown keeps them before it, also in later turns', () => {
    const log = [input('host'), input('j'), answer('host', 'both', ['j']), settled('host', 'completed'), settled('j', 'completed')]
    expect(turnView(log, 'host', ['j']).unseenJoined).toEqual([])
    expect(shown(turnView([...log, input('next')], 'next', []).entries)).toEqual(['user:host', 'user:j', 'model:both', 'user:next'])
  })

  it('a response logged before responses named their joined inputs saw those logged before it', () => {
    const log = [input('host'), input('j'), answer('host', 'old')]
    const view = turnView(log, 'host', ['j'])
    expect(shown(view.entries)).toEqual(['user:host', 'user:j', 'model:old'])
    expect(view.unseenJoined).toEqual([])
  })
})
