// One turn at a time per session, over a real worker process, with prompts from two hosts (each its
// own connections, as two servers would be): busy 'queue' runs the second turn after the first, in
// log order; 'steer' lets the second prompt join the running turn; 'reject' refuses it.
import { describe, expect, it } from 'vitest'
import { SessionBusyError } from '../../src/index.js'
import { harnesses, queued, rejecting, steered } from '../fixtures/busy.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

describe('busy modes', () => {
  const ctx = useWorkerProcesses({ label: 'busy', harnesses, module: 'test/fixtures/busy.ts', workers: 1 })

  it("busy 'queue' (default): a prompt to a session whose turn waits on a parked call runs after it, in log order", async () => {
    const a = ctx.host.open(queued, { sessionId: 'q' })
    const b = ctx.other.open(queued, { sessionId: 'q' })
    const first = await a.prompt('nap:1500', { inputId: 'first' })
    await ctx.workers[0]!.waitFor((l) => l.sessionId === 'q' && l.msg === 'tool call parked')
    const second = await b.prompt('next', { inputId: 'second' })
    expect(await b.settled(second.inputId, { timeoutMs: patient(30_000) })).toEqual({ outcome: 'completed', text: 'saw: next' })
    expect(await a.settled(first.inputId, { timeoutMs: patient(30_000) })).toEqual({ outcome: 'completed', text: 'saw: nap:1500' })
    // the second turn's first model call came after the first turn settled
    const log = await a.log.read()
    const settledFirst = log.findIndex(
      (e) => e.record.type === 'harness.input.settled' && (e.record as { inputId: string }).inputId === 'first',
    )
    const answeredSecond = log.findIndex(
      (e) => e.record.type === 'harness.model.response' && (e.record as { inputId: string }).inputId === 'second',
    )
    expect(settledFirst).toBeGreaterThan(0)
    expect(answeredSecond).toBeGreaterThan(settledFirst)
  })

  it("busy 'steer': a prompt to a busy session joins the running turn: its next model call sees it, and both settle with that answer", async () => {
    const a = ctx.host.open(steered, { sessionId: 's' })
    const b = ctx.other.open(steered, { sessionId: 's' })
    const first = await a.prompt('nap:1500', { inputId: 'first' })
    await ctx.workers[0]!.waitFor((l) => l.sessionId === 's' && l.msg === 'tool call parked')
    const second = await b.prompt('and also this', { inputId: 'second' })
    // the model's answer after the nap saw both prompts
    const answer = { outcome: 'completed', text: 'saw: nap:1500 | and also this' }
    expect(await a.settled(first.inputId, { timeoutMs: patient(30_000) })).toEqual(answer)
    expect(await b.settled(second.inputId, { timeoutMs: patient(30_000) })).toEqual(answer)
    // one turn: two model calls (the nap, then the answer that saw the steered prompt)
    expect(records(await a.log.read(), 'harness.model.response').map((r) => r.inputId)).toEqual(['first', 'first'])
  })

  it("busy 'reject': a prompt to a busy session throws SessionBusyError and writes nothing; after the turn it is accepted", async () => {
    const a = ctx.host.open(rejecting, { sessionId: 'r' })
    const b = ctx.other.open(rejecting, { sessionId: 'r' })
    const first = await a.prompt('nap:1000', { inputId: 'first' })
    await expect(b.prompt('too soon', { inputId: 'second' })).rejects.toBeInstanceOf(SessionBusyError)
    expect(records(await a.log.read(), 'harness.input').map((r) => r.inputId)).toEqual(['first'])
    await a.settled(first.inputId, { timeoutMs: patient(30_000) })
    const later = await b.prompt('now', { inputId: 'second' })
    expect(await b.settled(later.inputId, { timeoutMs: patient(30_000) })).toEqual({ outcome: 'completed', text: 'saw: now' })
  })
})
