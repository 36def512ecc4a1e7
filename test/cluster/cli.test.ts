// The `harness` CLI on a Redis Cluster: what the single-node suite (test/integration/cli.test.ts) cannot
// show. The bin takes REDIS_URL as the masters' list and DH_SHARDS=3; its worker serves all three shards,
// and the commands that read across sessions (questions, stats, sessions, turns, the lookup of answer)
// see a session on every shard. The commands' other behaviour does not depend on where keys lie, so it
// is tested once, on one Redis (docs/development.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HarnessHost } from '../../src/index.js'
import { defaultShards, shardOf } from '../../src/log/index.js'
import { ops } from '../fixtures/ops.js'
import { runBin, spawnBin, startOpsCli } from '../helpers/cli.js'
import { until } from '../helpers/log.js'

const ANSWER = { region: 'eu', replicas: 2, canary: false }

/** One session id on each shard, shard 0 first. */
function oneSessionAShard(shards: number): string[] {
  const ids: string[] = []
  for (let n = 0; ids.length < shards; n++) {
    const id = `cluster-cli-${n}`
    if (shardOf(id, shards) === ids.length) ids.push(id)
  }
  return ids
}

const lines = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('the harness CLI on a Redis Cluster', () => {
  let env: Record<string, string>
  let host: HarnessHost
  let stop: (() => Promise<void>) | undefined

  beforeAll(async () => void ({ env, host, stop } = await startOpsCli('cluster-cli')))
  afterAll(() => stop?.())

  it('a question parked on every shard: questions, stats, sessions and turns list all, answer finds each across shards, log --follow sees one land', async () => {
    const shards = defaultShards()
    expect(shards).toBe(3)
    const ids = oneSessionAShard(shards)
    const last = ids.at(-1)!
    const sessions = ids.map((sessionId) => host.open(ops, { sessionId }))
    // the bin's worker runs every turn: the question of each shard's session was asked there
    const follow = spawnBin(['log', last, '--follow', '--json'], env)
    const inputs = await Promise.all(sessions.map((s) => s.prompt('deploy:api')))
    await until(async () => (await host.questions()).length === shards, 'a question in every session')

    const listed = lines((await runBin(['questions', '--json'], env)).stdout)
    expect(listed.map((q) => q.sessionId).sort()).toEqual([...ids].sort())
    const questionId = String(listed[0]!.questionId)
    // the same call asks under the same id in each session
    expect(new Set(listed.map((q) => q.questionId))).toEqual(new Set([questionId]))
    const stats = JSON.parse((await runBin(['stats', '--json'], env)).stdout) as { openQuestions: number; openTurns: number }
    expect(stats).toMatchObject({ openQuestions: shards, openTurns: shards })

    // the lookup of the question's session searched every shard: it found all three
    const ambiguous = await runBin(['answer', questionId, JSON.stringify(ANSWER)], env)
    expect(ambiguous.code).toBe(2)
    expect(ambiguous.stderr).toContain(`open in ${shards} sessions`)
    for (const id of ids) expect(ambiguous.stderr).toContain(id)
    // the session on the last shard, answered from another process; its follower sees the turn land
    const answered = await runBin(['answer', questionId, JSON.stringify(ANSWER), `--session=${last}`], env)
    expect(answered).toMatchObject({ code: 0, stdout: `Answered ${questionId}.\n` })
    await follow.waitForLine((l) => l.includes('"kind":"settled"'))
    follow.proc.kill('SIGINT')
    expect(await follow.closed).toBe(0)
    expect(lines(follow.stdout).map((item) => item.kind)).toEqual([
      'input',
      'call',
      'attempt',
      'step',
      'question',
      'park',
      'answer',
      'step',
      'result',
      'model',
      'settled',
    ])
    for (const session of sessions.slice(0, -1)) await session.answer(questionId, ANSWER)
    const settled = await Promise.all(sessions.map((s, i) => s.settled(inputs[i]!.inputId)))
    expect(settled.every((s) => s.outcome === 'completed')).toBe(true)

    const listedSessions = lines((await runBin(['sessions', '--json'], env)).stdout)
    expect(listedSessions.map((s) => s.sessionId).sort()).toEqual([...ids].sort())
    const turns = lines((await runBin(['turns', '--status', 'completed', '--json'], env)).stdout)
    expect(turns.map((t) => t.sessionId).sort()).toEqual([...ids].sort())
  })
})
