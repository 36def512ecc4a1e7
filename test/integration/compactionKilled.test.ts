// R22 and R21 under SIGKILL, once (npm run chaos -- --compaction repeats it 20 times): the worker
// process running a turn's summarizeOldest summary call is SIGKILLed in the call (or right after the
// compaction's write); a fresh worker carries the turn on. One compaction per cut, and the view each
// logged model response was made from is the one a fresh reader rebuilds from the log.
import { rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { SessionLog } from '../../src/log/index.js'
import { compactingChaos, compactionChaosFile, readLines, type SeenCall } from '../../scripts/chaos/compactionHarness.js'
import { checkCompactedSession } from '../../scripts/chaos/compaction.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

const MODULE = 'scripts/chaos/compactionHarness.ts'

describe('a worker SIGKILLed during a compaction summary call', () => {
  const ctx = useWorkerProcesses({ label: 'compact-kill', harnesses: [compactingChaos], module: MODULE, workers: 1 })
  afterAll(() => {
    for (const what of ['calls', 'summaries'] as const) rmSync(compactionChaosFile(ctx.prefix, what), { force: true })
  })

  it('R22: leaves no compaction record or exactly one for its cut; R21: the views rebuilt from the log are the ones the live calls got', async () => {
    const sessionId = 'killed'
    const session = ctx.host.open(compactingChaos, { sessionId })
    const summaries = () => readLines<{ sessionId: string }>(ctx.prefix, 'summaries').filter((s) => s.sessionId === sessionId).length
    const turns = 10
    let killed = false
    for (let t = 0; t < turns; t++) {
      const { inputId } = await session.prompt(`[${sessionId}] question ${t} ${'with some words '.repeat(12)}`, { inputId: `t${t}` })
      if (!killed) {
        let done = false
        const settling = session.settled(inputId, { timeoutMs: patient(120_000) }).finally(() => (done = true))
        await until(async () => done || summaries() > 0, 'the turn to settle or a summary call to start', 120_000)
        if (summaries() > 0) {
          await new Promise((resolve) => setTimeout(resolve, 300))
          await ctx.workers.shift()!.kill('SIGKILL')
          expect((await session.log.read({ types: ['harness.compaction'] })).length).toBeLessThanOrEqual(1)
          ctx.workers.push(await ctx.spawn())
          killed = true
        }
        await settling
      }
      expect(await session.settled(inputId, { timeoutMs: patient(120_000) })).toMatchObject({ outcome: 'completed' })
    }
    expect(killed).toBe(true)
    const failures = await checkCompactedSession(
      new SessionLog(ctx.redis, ctx.prefix, sessionId),
      readLines<SeenCall>(ctx.prefix, 'calls'),
      turns,
    )
    expect(failures).toEqual([])
  }, 240_000)
})
