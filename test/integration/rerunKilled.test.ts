// A rerun keeps the `never` promise after a crash (issue 50): a `replay: 'never'` tool SIGKILLed
// mid-call lands `interrupted` (it may or may not have run), then the provider fails the turn. No
// rerun runs the tool again, however it is made (session.rerun, host.replay, `harness replay`), and
// the model sees the same interrupted result; `harness rerun --again <toolCallId>` runs it on purpose.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mailer, mailSends } from '../fixtures/rerunNever.js'
import { runBin } from '../helpers/cli.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { startModelServer, type ChatRequest, type ModelReply, type ModelServer } from '../helpers/openaiServer.js'
import type { Session } from '../../src/index.js'
import { patient } from '../helpers/patience.js'

const MODULE = 'test/fixtures/rerunNever.ts'
const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
const promptOf = (request: ChatRequest) => request.messages.filter((m) => m.role === 'user').at(-1)!.content!
const toolMessage = (request: ChatRequest) => request.messages.find((m) => m.role === 'tool')

/** A mail to the person the prompt names; once its result follows, an answer that quotes the result. */
function answer(request: ChatRequest): ModelReply {
  const to = promptOf(request)
  const tool = toolMessage(request)
  if (!tool) return { toolCalls: [{ id: `call_${to}`, name: 'sendMail', arguments: [JSON.stringify({ to, pauseMs: 60_000 })] }], usage }
  return { text: [`mailed ${to}: ${tool.content}`], usage }
}

const CASES = ['rerun', 'bulk', 'cli', 'again'] as const

describe("a 'never' call SIGKILLed mid-call, then its turn failed: reruns keep its interrupted result", () => {
  const ctx = useWorkerProcesses({ label: 'rerun-killed', harnesses: [mailer], module: MODULE, workers: 0 })
  let down = true
  let server: ModelServer
  const turns = new Map<string, { session: Session; inputId: string; toolCallId: string; interrupted: string }>()
  const cli = (...args: string[]) => runBin([...args, '--module', MODULE], { REDIS_URL: ctx.url, DH_PREFIX: ctx.prefix })
  const sends = async (to: string) => Number((await ctx.redis.hget(mailSends(ctx.prefix), to)) ?? 0)
  /** The tool message of the last model request of a turn (the one that answered it). */
  const lastSeen = (to: string) => toolMessage(server.requests.filter((r) => promptOf(r) === to).at(-1)!)?.content

  beforeAll(async () => {
    // the outage: every model call that would answer after the mail fails (a 503)
    server = await startModelServer(answer, {
      fault: (request) =>
        down && toolMessage(request)
          ? { status: 503, body: { error: { message: 'The server is overloaded.', type: 'server_error', code: null } } }
          : undefined,
    })
    const env = { OPENAI_BASE_URL: server.baseURL }
    const first = await ctx.spawn({ concurrency: 10, env })
    for (const to of CASES) {
      const session = ctx.host.open(mailer, { sessionId: `mail-${to}` })
      const { inputId } = await session.prompt(to, { metadata: { case: to } })
      turns.set(to, { session, inputId, toolCallId: '', interrupted: '' })
    }
    // every mail sent and its tool still pausing: the worker dies mid-call
    await until(async () => (await Promise.all(CASES.map(sends))).every((n) => n === 1), 'every mail to be sent', 60_000)
    await first.kill('SIGKILL')
    ctx.workers.push(await ctx.spawn({ concurrency: 10, env }))
    for (const [, turn] of turns) {
      expect(await turn.session.settled(turn.inputId, { timeoutMs: patient(60_000) })).toMatchObject({ outcome: 'failed' })
      const [result] = records(await turn.session.log.read(), 'harness.tool.result')
      expect(result).toMatchObject({ error: { code: 'interrupted' } })
      turn.toolCallId = result!.toolCallId as string
      turn.interrupted = (result!.error as { message: string }).message
    }
    down = false
  }, 180_000)
  afterAll(() => server?.close())

  /** The turn completed, its mail was sent once, its tool began twice (fresh, cut), and the model saw the interrupted result. */
  async function expectKept(to: (typeof CASES)[number]) {
    const turn = turns.get(to)!
    const settled = await turn.session.settled(turn.inputId, { timeoutMs: patient(20_000) })
    expect(settled).toMatchObject({ outcome: 'completed' })
    expect(settled.text).toContain(turn.interrupted)
    expect(lastSeen(to)).toContain(turn.interrupted)
    expect(await sends(to)).toBe(1)
    const log = await turn.session.log.read()
    expect(records(log, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'cut'])
    expect(records(log, 'harness.tool.result')).toHaveLength(1)
    return log
  }

  it('R19 session.rerun does not run the interrupted never call again: the model sees the same interrupted result', async () => {
    const turn = turns.get('rerun')!
    expect(await turn.session.rerun(turn.inputId, { principal: 'ops@acme' })).toBe(true)
    const log = await expectKept('rerun')
    expect(records(log, 'harness.turn.rerun')).toMatchObject([{ principal: 'ops@acme' }])
  }, 120_000)

  it('R19 host.replay (bulk) does not run it again', async () => {
    expect(await ctx.host.replay({ status: 'failed', metadata: { case: 'bulk' } })).toEqual({ count: 1 })
    await expectKept('bulk')
  }, 120_000)

  it('R19 harness replay (CLI) does not run it again', async () => {
    expect(await cli('replay', '--status', 'failed', '--tag', 'case=cli', '--by', 'oncall')).toMatchObject({
      code: 0,
      stdout: 'Reran 1 turn.\n',
    })
    const log = await expectKept('cli')
    expect(records(log, 'harness.turn.rerun')).toMatchObject([{ principal: 'oncall' }])
  }, 120_000)

  it('R19 harness rerun --again <toolCallId> runs it again on purpose, recorded with who did it; an id of no call of the turn is refused', async () => {
    const turn = turns.get('again')!
    const sid = turn.session.sessionId
    const refused = await cli('rerun', sid, turn.inputId, '--again', 'call-of-nobody')
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/call-of-nobody/)
    expect((await turn.session.settled(turn.inputId)).outcome).toBe('failed')

    expect(await cli('rerun', sid, turn.inputId, '--again', turn.toolCallId, '--by', 'oncall')).toMatchObject({ code: 0 })
    // it runs again from the top: a second mail, then the model gets the tool's result (its pause: 60 s)
    await until(async () => (await sends('again')) === 2, 'the mail to be sent again', 30_000)
    const log = await turn.session.log.read()
    expect(records(log, 'harness.tool.started').map((r) => r.reason)).toEqual(['fresh', 'cut', 'rerun'])
    expect(records(log, 'harness.turn.rerun')).toMatchObject([{ principal: 'oncall', calls: [turn.toolCallId], again: [turn.toolCallId] }])
  }, 120_000)
})
