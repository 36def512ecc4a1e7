// Two copies of the package in one process (an app with two versions, a harness module loaded by a
// global `harness` bin): vi.resetModules() makes the next import evaluate src/ again, a second copy.
import { describe, expect, it, vi } from 'vitest'

type Lib = typeof import('../../src/index.js')
type Loader = typeof import('../../src/cli/loadHarnesses.js')

async function twoCopies(): Promise<{ a: Lib & Loader; b: Lib }> {
  const a = { ...(await import('../../src/index.js')), ...(await import('../../src/cli/loadHarnesses.js')) }
  vi.resetModules()
  const b = await import('../../src/index.js')
  return { a, b }
}

describe('identity across two copies of the package', () => {
  it('the copies are two: each has its own error classes', async () => {
    const { a, b } = await twoCopies()
    expect(a.SessionBusyError).not.toBe(b.SessionBusyError)
  })

  it('isDurableHarnessError and instanceof DurableHarnessError hold for an error of the other copy, with its typed code', async () => {
    const { a, b } = await twoCopies()
    const error: unknown = new b.QuestionClosedError('q-1', 'answered')
    expect(a.isDurableHarnessError(error)).toBe(true)
    expect(error instanceof a.DurableHarnessError).toBe(true)
    if (a.isDurableHarnessError(error)) expect(error.code).toBe('question_answered')
    // a subclass is recognised by its brand too: the error's classes, by name
    expect(error instanceof a.QuestionClosedError).toBe(true)
    expect(error instanceof b.QuestionClosedError).toBe(true)
    expect(a.isDurableHarnessError(new Error('plain'))).toBe(false)
    expect(a.isDurableHarnessError({ code: 'config', message: 'looks like one' })).toBe(false)
  })

  it('instanceof an exported error class holds for an error of the other copy, and only for that class and its bases', async () => {
    const { a, b } = await twoCopies()
    const busy: unknown = new b.SessionBusyError('s-1', 'i-1')
    expect(busy instanceof a.SessionBusyError).toBe(true)
    expect(busy instanceof a.DurableHarnessError).toBe(true)
    expect(busy instanceof a.QuestionClosedError).toBe(false)
    expect(busy instanceof a.ToolCallError).toBe(false)
    if (busy instanceof a.SessionBusyError) expect([busy.code, busy.runningInputId]).toEqual(['session_busy', 'i-1'])
    // an error that only looks like one (its name, its code) is not
    expect(Object.assign(new Error('x'), { name: 'SessionBusyError', code: 'session_busy' }) instanceof a.SessionBusyError).toBe(false)
    expect(new b.NonRetryableError('stop') instanceof a.NonRetryableError).toBe(true)
    expect(new b.RetryAfterError('later', 1000) instanceof a.RetryAfterError).toBe(true)
    expect(new b.StepRetriesExhaustedError('s', 3, new Error('x')) instanceof a.StepRetriesExhaustedError).toBe(true)
  })

  it('a class demoted from the entry points is still recognised across copies, a subclass as its base too (ShardCountError is a ConfigError)', async () => {
    const a = await import('../../src/errors/index.js')
    vi.resetModules()
    const b = await import('../../src/errors/index.js')
    expect(a.ShardCountError).not.toBe(b.ShardCountError)
    const error: unknown = new b.ShardCountError('p', 2, 4)
    expect(error instanceof a.ShardCountError).toBe(true)
    expect(error instanceof a.ConfigError).toBe(true)
    expect(error instanceof a.RetentionConfigError).toBe(false)
    expect(new b.ConfigError('bad') instanceof a.ShardCountError).toBe(false)
  })

  it("the harness CLI's loader finds a harness that another copy made (a module importing the package itself)", async () => {
    const { a } = await twoCopies()
    vi.resetModules() // the fixture module and the src/ it imports: a fresh copy
    const [harness] = await a.loadHarnesses('./test/fixtures/provider.ts')
    expect(harness?.name).toBe('provider')
  })

  it('a ToolCallError keeps a library code, and says tool_error (with the code in toolError) for a code of the tool', async () => {
    const { a } = await twoCopies()
    expect(new a.ToolCallError('t', 'c1', { message: 'no', code: 'approval_denied' }).code).toBe('approval_denied')
    const own = new a.ToolCallError('t', 'c2', { message: 'declined', code: 'card_declined' })
    expect(own.code).toBe('tool_error')
    expect(own.toolError.code).toBe('card_declined')
  })
})
