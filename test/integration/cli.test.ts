// The `harness` CLI: the real bin, against real Redis, in processes of its own. A worker process
// started by `harness worker` runs the ops fixture; `log --follow` in another process sees a turn park
// on a question and land once `harness answer`, from a third process, wakes the parked call.
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarnessHost, type HarnessHost } from '../../src/index.js'
import { ops } from '../fixtures/ops.js'
import { runBin, spawnBin } from '../helpers/cli.js'
import { quiet } from '../helpers/hosts.js'
import { records, until } from '../helpers/log.js'
import { cleanupPrefix, getRedisUrl, uniquePrefix } from '../rig.js'

const MODULE = 'test/fixtures/ops.ts'

describe('the harness CLI', () => {
  let env: Record<string, string>
  let host: HarnessHost
  let worker: ReturnType<typeof spawnBin>

  beforeAll(async () => {
    env = { REDIS_URL: await getRedisUrl(), DH_PREFIX: uniquePrefix('cli'), HARNESS_MODULE: MODULE, LOG_JSON: '1' }
    host = createHarnessHost({ redis: env.REDIS_URL!, prefix: env.DH_PREFIX!, harnesses: [ops], logger: quiet })
    worker = spawnBin(['worker', MODULE, '--concurrency', '4'], env)
    await worker.waitForLine((l) => l.includes('worker started'))
  })
  afterAll(async () => {
    worker?.proc.kill('SIGTERM')
    await worker?.closed
    await host?.close()
    if (env?.DH_PREFIX) await cleanupPrefix(env.REDIS_URL!, env.DH_PREFIX)
  })

  it('wrong usage exits 2 with one clear line; --help exits 0', async () => {
    const unknown = await runBin(['frobnicate'], env)
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('Unknown command "frobnicate"')
    const help = await runBin(['answer', '--help'], env)
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: harness answer <questionId> <json>')
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
