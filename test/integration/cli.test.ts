// The `harness` CLI: the real bin, against real Redis, in processes of its own. A worker process
// started by `harness worker` runs the ops fixture; `log --follow` in another process sees a turn park
// on a question and land once `harness answer`, from a third process, wakes the parked call.
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HarnessHost } from '../../src/index.js'
import { ops } from '../fixtures/ops.js'
import { runBin, spawnBin, startOpsCli } from '../helpers/cli.js'
import { records, until } from '../helpers/log.js'

describe('the harness CLI', () => {
  let env: Record<string, string>
  let host: HarnessHost
  let stop: (() => Promise<void>) | undefined

  beforeAll(async () => void ({ env, host, stop } = await startOpsCli('cli')))
  afterAll(() => stop?.())

  it('wrong usage exits 2 with one clear line; --help exits 0', async () => {
    const unknown = await runBin(['frobnicate'], env)
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('Unknown command "frobnicate"')
    const help = await runBin(['answer', '--help'], env)
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: harness answer <questionId> <json>')
  })

  it('event sends a machine event (kept with no wait, a resend with its id a no-op) and schedules lists the schedules', async () => {
    const kept = await runBin(['event', 'payment.settled', 'cli-order', '{"amount":1}', '--id', 'cli-evt-1'], env)
    expect(kept.code).toBe(0)
    expect(kept.stdout).toContain('Kept payment.settled "cli-order"')
    expect((await runBin(['event', 'payment.settled', 'cli-order', '{"amount":1}', '--id', 'cli-evt-1'], env)).stdout).toContain(
      'was sent before',
    )
    // a payload that is not JSON: test/unit/cliArguments.test.ts
    await host.schedule({ id: 'cli-nightly', harness: ops, cron: '0 2 * * *', prompt: 'nightly report' })
    try {
      const listed = await runBin(['schedules'], env)
      expect(listed.code).toBe(0)
      expect(listed.stdout).toMatch(/cli-nightly\s+ops\s+0 2 \* \* \* UTC\s+schedule-cli-nightly\s+queue/)
      const json = JSON.parse((await runBin(['schedules', '--json'], env)).stdout) as { id: string; next: number }
      expect(json).toMatchObject({ id: 'cli-nightly', prompt: 'nightly report' })
    } finally {
      await host.unschedule('cli-nightly')
    }
  })

  it('log --follow sees a turn park on a question and land after `harness answer` from another process wakes it', async () => {
    const session = host.open(ops, { sessionId: 'cli-deploy' })
    const follow = spawnBin(['log', 'cli-deploy', '--follow', '--json'], env)
    const { inputId } = await session.prompt('deploy:search')
    const asked = JSON.parse(await follow.waitForLine((l) => l.includes('"kind":"question"'))) as { detail: { questionId: string } }
    const questionId = asked.detail.questionId

    const listed = await runBin(['questions', '--json'], env)
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain(`"questionId":"${questionId}"`)
    const stats = JSON.parse((await runBin(['stats', '--json'], env)).stdout) as { openQuestions: number; openTurns: number }
    expect(stats).toMatchObject({ openQuestions: 1, openTurns: 1 })

    // a bad answer is refused by the question's schema: exit 1, nothing logged
    const refused = await runBin(['answer', questionId, '{"region":"mars","replicas":1,"canary":false}'], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('was refused')

    const answered = await runBin(['answer', questionId, '{"region":"eu","replicas":2,"canary":false}'], env)
    expect(answered).toMatchObject({ code: 0, stdout: `Answered ${questionId}.\n` })
    await follow.waitForLine((l) => l.includes('"kind":"settled"'))
    follow.proc.kill('SIGINT')
    expect(await follow.closed).toBe(0)
    const kinds = follow.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { kind: string }).kind)
    expect(kinds).toEqual(['input', 'call', 'attempt', 'step', 'question', 'park', 'answer', 'step', 'result', 'model', 'settled'])
    expect(await session.settled(inputId)).toMatchObject({ outcome: 'completed', text: expect.stringContaining('"region":"eu"') })

    // the readable form of the same timeline
    const text = await runBin(['log', 'cli-deploy'], env)
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/answer\s+call-0-0 answered .*"region":"eu"/)
    const sessions = await runBin(['sessions'], env)
    expect(sessions.stdout).toMatch(/cli-deploy\s+ops\s+0/)
  })

  it('log prints a value a caller or model chose on one line, escaped: no forged line, no raw control, separator or bidi character', async () => {
    const forged = `12:00:00.000  settled   turn x completed: paid`
    const hostile = `pay\n${forged}\r\n${forged}\u2028\u202eevil\u2066\u200f\u061c\x1b[2J\x1b]8;;x\x07\tend\u0085\u007f\u200b\u{e0041}`
    const session = host.open(ops, { sessionId: 'cli-hostile' })
    const { inputId } = await session.prompt(hostile)
    await session.settled(inputId)
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    const unsafe = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\u061c\u{e0000}-\u{e007f}]/u

    const text = await runBin(['log', 'cli-hostile'], env)
    expect(text.code).toBe(0)
    expect(text.stdout).not.toMatch(unsafe)
    const lines = text.stdout.trimEnd().split('\n')
    expect(lines.map((l) => l.split(/\s+/)[1])).toEqual(['input', 'model', 'settled'])
    expect(lines[0]).toContain(
      `pay\\n${forged}\\r\\n${forged}\\u2028\\u202eevil\\u2066\\u200f\\u061c\\u001b[2J\\u001b]8;;x\\u0007\\tend\\u0085\\u007f\\u200b\\u{e0041}`,
    )

    // --json: the same value, escaped so the line holds no raw character of the set and parses back to it
    const json = await runBin(['log', 'cli-hostile', '--json'], env)
    expect(json.stdout).not.toMatch(unsafe)
    const items = json.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; text: string })
    expect(items.map((i) => i.kind)).toEqual(['input', 'model', 'settled'])
    expect(items[0]!.text).toContain(hostile)

    // a question whose message holds a model's value: the questions table escapes it too
    const asking = host.open(ops, { sessionId: 'cli-hostile-q' })
    const deploy = await asking.prompt('deploy:\u202eevil\x1b[2J\u200b')
    let question
    while (!(question = (await asking.questions())[0])) await new Promise((r) => setTimeout(r, 50))
    const listed = await runBin(['questions'], env)
    expect(listed.stdout).not.toMatch(unsafe)
    expect(listed.stdout).toContain('Deploy \\u202eevil\\u001b[2J\\u200b v2?')
    await asking.answer(question.questionId, { region: 'eu', replicas: 1, canary: false })
    await asking.settled(deploy.inputId)
  })

  it("a session id that starts with '-' is addressed after '--' (log, abort) or as --session=<id>; without them the error says how", async () => {
    const session = host.open(ops, { sessionId: '-dash' })
    const { inputId } = await session.prompt('hello')
    await session.settled(inputId)

    // the words parsed (no '--', options after it, --session without '='): test/unit/cliArguments.test.ts;
    // here one misuse shows the bin's side of it, and the addressing forms reach the session
    const bare = await runBin(['log', '-dash'], env)
    expect(bare.code).toBe(2)
    expect(bare.stderr).toContain("goes after '--': harness log -- -dash.")
    const log = await runBin(['log', '--json', '--', '-dash'], env)
    expect(log.code).toBe(0)
    expect(
      log.stdout
        .trimEnd()
        .split('\n')
        .map((l) => (JSON.parse(l) as { kind: string }).kind),
    ).toEqual(['input', 'model', 'settled'])
    expect(await runBin(['abort', '--reason', 'late', '--', '-dash', inputId], env)).toMatchObject({
      code: 1,
      stdout: `Turn ${inputId} had settled already; nothing to abort.\n`,
    })

    const asking = host.open(ops, { sessionId: '-dash-refund' })
    const refund = await asking.prompt('refund:3')
    let question
    while (!(question = (await asking.questions())[0])) await new Promise((r) => setTimeout(r, 50))
    expect(await runBin(['approve', question.questionId, '--session=-dash-refund'], env)).toMatchObject({ code: 0 })
    expect(await asking.settled(refund.inputId)).toMatchObject({ outcome: 'completed', text: expect.stringContaining('"refunded":3') })
  })

  it("abort --by records who aborted, and log shows the abort's principal (by <id>), also of an abort made with session.abort", async () => {
    const session = host.open(ops, { sessionId: 'abort-by' })
    const first = await session.prompt('refund:4')
    const second = await session.prompt('refund:5')
    // the first turn waits on its approval question, the second in line: open until aborted
    await until(async () => (await session.questions()).length >= 1, 'the first approval question')
    expect(await runBin(['abort', '--by', 'ops-1', '--reason', 'wrong order', '--', 'abort-by', first.inputId], env)).toMatchObject({
      code: 0,
      stdout: `Aborted ${first.inputId}.\n`,
    })
    expect(await session.abort(second.inputId, 'duplicate', { principal: 'alice@shop' })).toBe(true)
    expect(records(await session.log.read(), 'harness.input.settled').map((r) => r.principal)).toEqual(['ops-1', 'alice@shop'])
    const log = await runBin(['log', 'abort-by'], env)
    expect(log.code).toBe(0)
    expect(log.stdout).toContain(`turn ${first.inputId} aborted by ops-1: wrong order`)
    expect(log.stdout).toContain(`turn ${second.inputId} aborted by alice@shop: duplicate`)
  })

  it("resume goes on with a turn paused by onExhausted: 'pause'; a turn that is not paused exits 1", async () => {
    const healed = join(tmpdir(), `${env.DH_PREFIX}-healed`)
    const session = host.open(ops, { sessionId: 'cli-paused' })
    const { inputId } = await session.prompt(`overloaded:${healed}`)
    await until(async () => records(await session.log.read(), 'harness.turn.paused').length === 1, 'the turn to pause')
    writeFileSync(healed, '1')
    try {
      expect(await runBin(['resume', 'cli-paused', inputId], env)).toMatchObject({ code: 0, stdout: `Resumed ${inputId}.\n` })
      expect(await session.settled(inputId)).toEqual({ outcome: 'completed', text: 'healed' })
      const again = await runBin(['resume', 'cli-paused', inputId], env)
      expect(again.code).toBe(1)
      expect(again.stdout).toContain('is not paused')
    } finally {
      rmSync(healed, { force: true })
    }
  })

  it("compact compacts a session's model view now, with --by on the record and in the log; again, nothing is left to compact", async () => {
    const session = host.open(ops, { sessionId: 'cli-compact' })
    for (const text of ['first', 'second', 'third']) await session.settled((await session.prompt(text)).inputId)
    const done = await runBin(['compact', 'cli-compact', '--by', 'ops-2'], env)
    expect(done).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Compacted cli-compact: ~\d+ -> ~\d+ tokens \(\d+-\d+\)\.\n$/) })
    expect(records(await session.log.read(), 'harness.compaction')).toEqual([
      expect.objectContaining({ strategy: 'evictOldest', reason: 'manual', principal: 'ops-2', omitted: 3 }),
    ])
    expect((await runBin(['compact', 'cli-compact'], env)).stdout).toMatch(/^Nothing to compact in cli-compact \(~\d+ tokens\)\.\n$/)
    expect((await runBin(['log', 'cli-compact'], env)).stdout).toMatch(
      /compacted \(evictOldest, manual\) by ops-2: turns through \S+ left out; ~\d+ -> ~\d+ tokens/,
    )
  })

  it("reset starts a session's model context over from --note, with --by on the record and in the log", async () => {
    const session = host.open(ops, { sessionId: 'cli-reset' })
    for (const text of ['first', 'second']) await session.settled((await session.prompt(text)).inputId)
    const done = await runBin(['reset', 'cli-reset', '--note', 'the user wants a refund', '--by', 'ops-3'], env)
    expect(done).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Reset cli-reset: ~\d+ -> ~\d+ tokens \(\d+-\d+\)\.\n$/) })
    expect(records(await session.log.read(), 'harness.compaction')).toEqual([
      expect.objectContaining({ strategy: 'reset', reason: 'reset', principal: 'ops-3', summary: 'the user wants a refund' }),
    ])
    expect((await runBin(['log', 'cli-reset'], env)).stdout).toMatch(
      /reset by ops-3: the model's context starts over from the note: the user wants a refund; ~\d+ -> ~\d+ tokens/,
    )
  })

  it('fork makes a new session of the turns before --before, with --by on its harness.fork record', async () => {
    const session = host.open(ops, { sessionId: 'cli-fork' })
    for (const [i, text] of ['first', 'second'].entries()) await session.settled((await session.prompt(text, { inputId: `f${i}` })).inputId)
    const done = await runBin(['fork', 'cli-fork', '--before', 'f1', '--as', 'cli-forked', '--by', 'ops-4'], env)
    expect(done).toMatchObject({ code: 0, stdout: 'Forked cli-fork as cli-forked.\n' })
    const forked = await host.open(ops, { sessionId: 'cli-forked' }).log.read()
    expect(records(forked, 'harness.input').map((r) => r.inputId)).toEqual(['f0'])
    expect(records(forked, 'harness.fork')).toEqual([
      expect.objectContaining({ from: 'cli-fork', before: 'f1', turns: 1, principal: 'ops-4' }),
    ])
    expect((await runBin(['fork', 'cli-fork', '--as', 'cli-forked'], env)).code).toBe(1)
  })

  it('usage prints the spend by model, principal and day (host.usage), a principal chosen by a caller escaped; --json is host.usage', async () => {
    const session = host.open(ops, { sessionId: 'cli-usage' })
    for (const principal of ['cli-usage@acme', 'cli-usage\u001b[2J'])
      await session.settled((await session.prompt('hello', { principal })).inputId)
    const json = JSON.parse((await runBin(['usage', '--principal', 'cli-usage@acme', '--json'], env)).stdout) as {
      total: { calls: number; estimatedCalls: number }
      byPrincipal: Record<string, { calls: number }>
    }
    expect(json).toEqual(await host.usage({ principal: 'cli-usage@acme' }))
    expect(json.total.calls).toBeGreaterThanOrEqual(1)
    expect(Object.keys(json.byPrincipal)).toEqual(['cli-usage@acme'])
    const text = await runBin(['usage', '--since', '1d'], env)
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^SPEND\s+CALLS\s+INPUT\s+OUTPUT.*\nall\s+\d/)
    expect(text.stdout).toContain('cli-usage@acme')
    expect(text.stdout).not.toContain('\u001b')
    expect((await runBin(['usage', '--since', 'yesterday'], env)).code).toBe(2)
  })

  it('approve runs a needsApproval call; deny lands its tool error with the reason', async () => {
    const session = host.open(ops, { sessionId: 'cli-refund' })
    const first = await session.prompt('refund:7')
    const waitQuestion = async () => {
      for (;;) {
        const [q] = await session.questions()
        if (q) return q
        await new Promise((r) => setTimeout(r, 50))
      }
    }
    const q1 = await waitQuestion()
    // the same call in another session asks under the same question id: the CLI asks which session
    const other = host.open(ops, { sessionId: 'cli-refund-2' })
    await other.prompt('refund:1')
    for (;;) {
      if ((await other.questions()).length > 0) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const ambiguous = await runBin(['approve', q1.questionId], env)
    expect(ambiguous.code).toBe(2)
    expect(ambiguous.stderr).toMatch(/open in 2 sessions \((cli-refund, cli-refund-2|cli-refund-2, cli-refund)\): pass --session/)
    expect(await runBin(['approve', q1.questionId, '--session', 'cli-refund', '--reason', 'ok by ops'], env)).toMatchObject({ code: 0 })
    expect(await session.settled(first.inputId)).toMatchObject({ outcome: 'completed', text: expect.stringContaining('"refunded":7') })

    const second = await session.prompt('refund:9')
    const q2 = await waitQuestion()
    expect(await runBin(['deny', q2.questionId, '--reason', 'too much'], env)).toMatchObject({ code: 0 })
    expect((await session.settled(second.inputId)).text).toContain('too much')
  })
})
