// Deploys during a wait (docs/deploys.md): one call a row of the change table parks under v1 in a worker
// process; `harness check-deploy` flags exactly the breaking rows of v2 and passes v2-safe, with no
// provider call; then the workers restart on v2, the questions are answered, and each call does what
// its row says.
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkDeploy } from '../../src/deploys/index.js'
import { createHarnessHost, defineHarness, ToolCallError, type HarnessHost, type Session } from '../../src/index.js'
import type { RecordOf } from '../../src/log/index.js'
import { replaySession, scriptedModel, type DeployProblem } from '../../src/testing/index.js'
import { BREAKING_ROWS, deployHarness, provider, ROWS, SAFE_ROWS } from '../fixtures/deploys.js'
import { runBin } from '../helpers/cli.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { cleanupPrefix, getRedisUrl, uniquePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const silent = pino({ level: 'silent' })
const MODULE = 'test/fixtures/deploys.ts'

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

type Outcome = { result: unknown } | { error: ToolCallError }

describe('deploys during a wait: the change table over worker processes', () => {
  let url: string
  let redis: Redis
  const prefix = uniquePrefix('deploys')
  const v1 = deployHarness('v1')
  const v2 = deployHarness('v2')
  let host: HarnessHost
  let worker: WorkerProcess | undefined
  const sessions = new Map<string, Session>()
  const outcomes = new Map<string, Promise<Outcome>>()
  const effects = async () => redis.lrange(provider.key(prefix), 0, -1)
  const bin = (code: string, json: boolean) =>
    runBin(['check-deploy', MODULE, ...(json ? ['--json'] : [])], { REDIS_URL: url, DH_PREFIX: prefix, DEPLOY_CODE: code })

  beforeAll(async () => {
    url = await getRedisUrl()
    redis = new Redis(url)
    host = createHarnessHost({ redis: url, harnesses: [v1], prefix, logger: silent })
    worker = await spawnWorker({ redisUrl: url, prefix, module: MODULE, concurrency: 20, env: { DEPLOY_CODE: 'v1' } })
    for (const row of ROWS) {
      const session = host.open(v1, { sessionId: `s-${row}` })
      sessions.set(row, session)
      const call = session.runTool({ name: row, input: { n: 1 }, toolCallId: `c-${row}` }, { timeoutMs: 600_000 })
      outcomes.set(
        row,
        call.then(
          (result) => ({ result }),
          (error: ToolCallError) => ({ error }),
        ),
      )
    }
    // every call parked under v1 on its question `go`, its one step stored
    await waitUntil(
      async () => (await Promise.all([...sessions.values()].map((s) => s.questions()))).every((q) => q.length === 1),
      'v1 parks',
    )
  }, 300_000)
  afterAll(async () => {
    await worker?.kill('SIGKILL')
    await host?.close()
    provider.close()
    await cleanupPrefix(url, prefix)
    redis?.disconnect()
  })

  it('each call and question records the version it began under (v1), shown on its attempt line', async () => {
    const s = sessions.get('steady')!
    const started = (await s.log.read({ types: ['harness.tool.started'] }))[0]!.record as RecordOf<'harness.tool.started'>
    expect(started.version).toBe(v1.version)
    expect((await s.questions())[0]!.version).toBe(v1.version)
    expect(v2.version).not.toBe(v1.version) // the default version: a hash of the tools and their schemas
    const log = await runBin(['log', 's-steady', '--module', MODULE], { REDIS_URL: url, DH_PREFIX: prefix, DEPLOY_CODE: 'v1' })
    expect(log.stdout).toContain(`version ${v1.version}`)
  }, 120_000)

  it('check-deploy flags exactly the breaking rows of v2 (exit 1) and passes v2-safe (exit 0); the dry replay calls no provider', async () => {
    const before = await effects()
    expect(before).toHaveLength(ROWS.length + 1) // reorder has two steps
    const [broken, safe] = await Promise.all([bin('v2', true), bin('v2-safe', false)])
    expect(broken.code, broken.stderr).toBe(1)
    const problems = broken.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as DeployProblem & { problems?: number })
      .filter((p) => p.problems === undefined)
    expect([...new Set(problems.map((p) => p.tool))].sort()).toEqual([...BREAKING_ROWS].sort())
    const byRow = (row: string) => problems.filter((p) => p.tool === row).map((p) => `${p.code} ${p.step ?? ''}`.trim())
    expect(byRow('removed')).toEqual(['unknown_tool'])
    expect(byRow('renameMe')).toEqual(['unknown_tool'])
    // the dry replay cannot run a step the log does not have: every stored step after it is listed too
    expect(byRow('renameStep')).toEqual(['step_not_reached renameStep:1', 'step_not_reached go'])
    expect(byRow('stepBefore')).toEqual(['step_not_reached stepBefore:1', 'step_not_reached go'])
    expect(byRow('removeStep')).toEqual(['step_not_reached removeStep:1'])
    expect(byRow('renameAsk')).toEqual(['step_not_reached go'])
    expect(byRow('removeAsk')).toEqual(['step_not_reached go'])
    expect(problems.find((p) => p.tool === 'removeAsk')!.message).toContain('its answer would be ignored')
    expect(byRow('answerSchema')).toEqual(['answer_schema_changed go'])
    expect(byRow('inputNarrow')).toEqual(['invalid_tool_input'])
    const renamed = problems.find((p) => p.tool === 'renameStep')!
    expect(renamed).toMatchObject({ sessionId: 's-renameStep', toolCallId: 'c-renameStep' })
    expect(renamed.message).toBe(
      'stored step `renameStep:1` is never reached by the new code (it stops at step `renameStep-v2:1`, which the log does not have): ' +
        'its side effect would run again under a new idempotency key',
    )
    expect(safe.code, safe.stdout + safe.stderr).toBe(0)
    expect(safe.stdout).toBe(
      `ok: ${ROWS.length} open call(s) in ${ROWS.length} session(s) against deploys/shop@${deployHarness('v2-safe').version}; nothing breaks.\n`,
    )
    // replaySession (durable-harness/testing), for CI: the same check of one recorded session
    const replayed = await replaySession({ redis: url, prefix, sessionId: 's-renameStep', harness: v2 })
    expect(replayed.problems.map((p) => p.step)).toEqual(['renameStep:1', 'go'])
    expect((await replaySession({ redis: url, prefix, sessionId: 's-stepAfter', harness: v2 })).problems).toEqual([])
    // a module without the calls' harness: nothing would run them
    const other = defineHarness({ name: 'deploys/other', adapter: scriptedModel([]) })
    const orphaned = await checkDeploy({ redis: url, prefix, harnesses: [other] })
    expect(orphaned.problems.map((p) => p.code)).toEqual(ROWS.map(() => 'unknown_harness'))
    expect(await effects()).toEqual(before) // no step's fn ran: the provider counts no call
  }, 180_000)

  it('woken under v2, each call does what its row of the table says', async () => {
    await worker!.kill()
    worker = await spawnWorker({ redisUrl: url, prefix, module: MODULE, concurrency: 20, env: { DEPLOY_CODE: 'v2' } })
    for (const s of sessions.values()) await s.answer((await s.questions())[0]!.questionId, { ok: true })
    // renamed ask: the answer to `go` is ignored and the person is asked again; an ask added after the wait is asked
    for (const [row, name] of [
      ['renameAsk', 'go-v2'],
      ['askAfter', 'go-again'],
    ] as const) {
      const s = sessions.get(row)!
      await waitUntil(async () => (await s.questions()).some((q) => q.name === name), `the question ${name}`)
      await s.answer((await s.questions())[0]!.questionId, { ok: true })
    }
    const done = Object.fromEntries(await Promise.all(ROWS.map(async (row) => [row, await outcomes.get(row)!] as const)))
    for (const row of [...SAFE_ROWS, 'renameStep', 'stepBefore', 'removeStep', 'removeAsk', 'renameAsk'])
      expect(done[row], row).toEqual({ result: { done: row } })
    for (const [row, code] of [
      ['removed', 'unknown_tool'],
      ['renameMe', 'unknown_tool'],
      ['answerSchema', 'invalid_answer'],
      ['inputNarrow', 'invalid_tool_input'],
    ] as const)
      expect((done[row] as { error: ToolCallError }).error?.toolError.code, row).toBe(code)
    const ran = await effects()
    const count = (name: string) => ran.filter((e) => e.startsWith(`${name}|`)).length
    // safe: stored steps replay (one run each); a step added after the wait runs once
    for (const row of SAFE_ROWS.filter((r) => r !== 'reorder')) expect(count(`${row}:1`), row).toBe(1)
    // reordered stored steps: each found by its name, neither runs again
    expect([count('reorder-a:1'), count('reorder-b:1')]).toEqual([1, 1])
    expect(count('stepAfter-new:1')).toBe(1)
    // a renamed step: its side effect ran again, under another idempotency key
    const keys = ran.filter((e) => e.startsWith('renameStep')).map((e) => e.split('|')[1])
    expect(keys).toHaveLength(2)
    expect(new Set(keys).size).toBe(2)
    // a step inserted before a stored one: the new one runs, the stored one replays
    expect([count('stepBefore-new:1'), count('stepBefore:1')]).toEqual([1, 1])
  }, 300_000)

  it('a call begun with its runTool request (a generated id) records the version too', async () => {
    const host2 = createHarnessHost({ redis: url, harnesses: [v2], prefix, logger: silent })
    try {
      const s = host2.open(v2, { sessionId: 's-generated' })
      const call = s.runTool({ name: 'added', input: { n: 3 } }, { timeoutMs: patient(120_000) })
      await waitUntil(async () => (await s.questions()).length === 1, 'the generated call parks')
      const started = (await s.log.read({ types: ['harness.tool.started'] })).map(
        (e) => (e.record as RecordOf<'harness.tool.started'>).version,
      )
      expect(started).toEqual([v2.version])
      await s.answer((await s.questions())[0]!.questionId, { ok: true })
      expect(await call).toEqual({ done: 'added' })
    } finally {
      await host2.close()
    }
  }, 180_000)

  it('check-deploy without a module is a usage error (exit 2) that names the argument', async () => {
    const usage = await runBin(['check-deploy'], { REDIS_URL: url, DH_PREFIX: prefix })
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('Usage: harness check-deploy <new harness module>')
  }, 120_000)

  it('a legacy tool runs only calls begun under an older version: a new call of it under v2 lands unknown_tool', async () => {
    const s = host.open(v1, { sessionId: 's-legacy-new' })
    const error = await s
      .runTool({ name: 'legacy', input: { n: 2 }, toolCallId: 'c-legacy-new' }, { timeoutMs: patient(120_000) })
      .catch((e: unknown) => e)
    expect((error as ToolCallError).toolError.code).toBe('unknown_tool')
  }, 180_000)
})
