// TanStack middleware over real worker processes: the model-call hooks run in the worker that runs
// the turn, the tool hooks in the worker of the attempt that runs the tool, in array order, with
// skip / transformArgs applied there; and after a worker is SIGKILLed mid-call, the attempt that
// lands runs onAfterToolCall once while the kept step does not run again.
import { describe, expect, it } from 'vitest'
import { harnesses, watched, wrapped } from '../fixtures/middleware.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'

describe('middleware in worker processes', () => {
  const ctx = useWorkerProcesses({ label: 'mw-workers', harnesses, module: 'test/fixtures/middleware.ts', workers: 1 })
  const list = async (name: string) => (await ctx.redis.lrange(`${ctx.prefix}:${name}`, 0, -1)).map((e) => e.split('@') as [string, string])

  it('runs model-call and tool hooks in the worker, in array order, with skip and transformArgs decided there', async () => {
    const session = ctx.host.open(watched, { sessionId: 'order' })
    const { inputId } = await session.prompt('go')
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed', text: 'done' })
    // onFinish runs right after the settle, in the worker whose settle won
    await until(async () => (await list('hooks')).some(([h]) => h === 'B:onFinish:done'), 'onFinish')
    const hooks = await list('hooks')
    // every hook ran in the worker process, none in the process that prompted
    const worker = String(ctx.workers[0]!.proc.pid)
    expect(new Set(hooks.map(([, pid]) => pid))).toEqual(new Set([worker]))
    const names = hooks.map(([hook]) => hook)
    expect(names.filter((h) => !h.includes('ToolCall') && !h.includes('onConfig'))).toEqual([
      'A:onStart',
      'B:onStart',
      'A:onIteration:0',
      'B:onIteration:0',
      'A:onIteration:1',
      'B:onIteration:1',
      'A:onFinish:done',
      'B:onFinish:done',
    ])
    // onConfig: the turn's (init and beforeModel, then beforeModel) and, to bind the tool as chat() does,
    // each of the three calls' (init, then beforeModel), in the calls' interleaved order
    const configs = names.filter((h) => h.includes('onConfig'))
    expect(configs.slice(0, 4)).toEqual(['A:onConfig:init', 'B:onConfig:init', 'A:onConfig:beforeModel', 'B:onConfig:beforeModel'])
    expect(configs.filter((h) => h.endsWith(':init'))).toHaveLength(2 + 3 * 2)
    expect(configs.filter((h) => h.endsWith(':beforeModel'))).toHaveLength(2 * 2 + 3 * 2)
    // per call: A before B, before the tool; the decider (last) skipped n=1 and made n=2 run as 20
    for (const n of [1, 2, 5]) {
      const mine = names.filter((h) => h.includes(`{"n":${n}}`))
      expect(mine).toEqual([`A:onBeforeToolCall:count:{"n":${n}}`, `B:onBeforeToolCall:count:{"n":${n}}`])
    }
    expect(names.filter((h) => h.startsWith('A:onAfterToolCall')).sort()).toEqual(
      [
        'A:onAfterToolCall:count:{"counted":20}',
        'A:onAfterToolCall:count:{"counted":5}',
        'A:onAfterToolCall:count:{"skipped":true}',
      ].sort(),
    )
    expect((await list('ran')).map(([r]) => r).sort()).toEqual(['count:20', 'count:5'])
    const results = records(await session.log.read(), 'harness.tool.result').map((r) => r.result)
    expect(results).toEqual(expect.arrayContaining([{ skipped: true }, { counted: 20 }, { counted: 5 }]))
  })

  it('a worker SIGKILLed mid-call: the next attempt runs onBeforeToolCall again, onAfterToolCall once, and the kept step does not run again', async () => {
    await ctx.redis.del(`${ctx.prefix}:hooks`, `${ctx.prefix}:ran`)
    const session = ctx.host.open(watched, { sessionId: 'crash' })
    const { inputId } = await session.prompt('hold')
    // kept, not only run: a kill between the step's side effect and its save runs it again (R5)
    await until(
      async () => records(await session.log.read(), 'harness.tool.step').some((r) => r.name === 'a'),
      'the step of hold to be kept',
    )
    const first = ctx.workers[0]!
    await first.kill('SIGKILL')
    const second = await ctx.spawn()
    ctx.workers.push(second)
    await ctx.redis.set(`${ctx.prefix}:release`, '1')
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed', text: 'done' })
    const hooks = (await list('hooks')).filter(([h]) => h.includes('ToolCall:hold'))
    expect(hooks).toEqual([
      ['A:onBeforeToolCall:hold:{}', String(first.proc.pid)],
      ['B:onBeforeToolCall:hold:{}', String(first.proc.pid)],
      ['A:onBeforeToolCall:hold:{}', String(second.proc.pid)],
      ['B:onBeforeToolCall:hold:{}', String(second.proc.pid)],
      ['A:onAfterToolCall:hold:"released"', String(second.proc.pid)],
      ['B:onAfterToolCall:hold:"released"', String(second.proc.pid)],
    ])
    expect((await list('ran')).map(([r]) => r)).toEqual(['hold:a'])
    const started = records(await session.log.read(), 'harness.tool.started').filter((r) => r.name === 'hold')
    expect(started.map((r) => r.reason)).toEqual(['fresh', 'rerun'])
  })

  it('a wrapped durable tool SIGKILLed mid-call runs again with its stored step replayed and the wrapper around it again; the wrapper sees the result once', async () => {
    await ctx.redis.del(`${ctx.prefix}:hooks`, `${ctx.prefix}:ran`, `${ctx.prefix}:release`)
    const session = ctx.host.open(wrapped, { sessionId: 'wrapped-crash' })
    const { inputId } = await session.prompt('hold')
    await until(
      async () => records(await session.log.read(), 'harness.tool.step').some((r) => r.name === 'a'),
      'the step of hold to be kept',
    )
    const first = ctx.workers.at(-1)!
    await first.kill('SIGKILL')
    const second = await ctx.spawn()
    await ctx.redis.set(`${ctx.prefix}:release`, '1')
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed', text: 'done' })
    expect((await list('hooks')).filter(([h]) => h.startsWith('wrap:'))).toEqual([
      ['wrap:before:hold:{}', String(first.proc.pid)],
      ['wrap:before:hold:{}', String(second.proc.pid)],
      ['wrap:after:hold:"released"', String(second.proc.pid)],
    ])
    // the step ran once, in the first attempt; the second replayed it
    expect((await list('ran')).map(([r]) => r)).toEqual(['hold:a'])
    const started = records(await session.log.read(), 'harness.tool.started').filter((r) => r.name === 'hold')
    expect(started.map((r) => r.reason)).toEqual(['fresh', 'rerun'])
    expect(records(await session.log.read(), 'harness.tool.result').map((r) => r.result)).toEqual([{ wrapped: 'released' }])
  })
})
