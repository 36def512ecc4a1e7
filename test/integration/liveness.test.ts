// Worker liveness (docs/recovery.md, docs/decisions/worker-liveness.md): a worker process that is gone
// (SIGKILL: its connections close at once) has its calls and turns moved by another process within
// about a second, long before their locks expire (the fixture's lock is 30 s, so only the check for
// gone processes can explain a rerun within half of it); a stopped process keeps its connections and
// is never found gone while it holds its lock, and after it wakes its attempt runs no side effect more.
import { describe, expect, it } from 'vitest'
import { livenessKeys, liveness } from '../fixtures/liveness.js'
import { records, until } from '../helpers/log.js'
import { useWorkerProcesses } from '../helpers/hosts.js'
import { armed, entryMs, holderOf, jobKey, startedOf } from '../helpers/liveness.js'
import { patient } from '../helpers/patience.js'

const MODULE = 'test/fixtures/liveness.ts'
const LOCK_MS = 30_000
const GONE = 'worker process gone: job moved back to wait'
const LOCK_LOST = 'attempt lost its job lock to another worker; it stopped before its next side effect and wrote nothing more'

describe('a worker process that is gone', () => {
  const ctx = useWorkerProcesses({ label: 'liveness', module: MODULE, harnesses: [liveness], workers: 0, concurrency: 2 })
  const keys = () => livenessKeys(ctx.prefix)

  it("R10: a worker process SIGKILLed mid-call: the call runs again on another process long before its 30 s lock expires; step a's side effect ran once, step b's once", async () => {
    const pair = await Promise.all([ctx.spawn(), ctx.spawn()])
    ctx.workers.push(...pair)
    await armed(pair)
    const session = ctx.host.open(liveness, { sessionId: 'killed-call' })
    const run = session.runTool({ name: 'hangOnce', input: { hangMs: 3_600_000 }, toolCallId: 'k-call' }, { timeoutMs: patient(60_000) })
    await until(async () => (await ctx.redis.get(keys().attempts)) === '1', 'the call inside its wait')
    const runner = await holderOf(ctx.redis, jobKey(ctx.prefix, 'liveness', 'killed-call', { toolCallId: 'k-call' }), pair)
    const survivor = pair.find((w) => w !== runner)!
    const killedAt = Date.now()
    await runner.kill('SIGKILL')
    expect(await run).toEqual({ b: 1 })
    const started = startedOf(await session.log.read(), 'k-call')
    expect(started.map((e) => e.record)).toMatchObject([{ reason: 'fresh' }, { reason: 'rerun', attempt: 2 }])
    // the lock had at least lockMs / 2 left (renewed every lockMs / 2): the lease could not have moved it yet
    expect(entryMs(started[1]!) - killedAt).toBeLessThan(LOCK_MS / 2)
    expect([await ctx.redis.get(keys().a), await ctx.redis.get(keys().b)]).toEqual(['1', '1'])
    expect(survivor.lines.some((l) => l.msg === GONE && l.toolCallId === 'k-call')).toBe(true)
  })

  it("R15: a worker process SIGKILLed mid-turn (inside its model call): the turn runs again on another process long before its lock expires, and BullMQ's stall count counts the crash", async () => {
    const [survivor] = ctx.workers.filter((w) => w.proc.exitCode === null && w.proc.signalCode === null)
    const fresh = await ctx.spawn()
    ctx.workers.push(fresh)
    const pair = [survivor!, fresh]
    await armed(pair)
    const session = ctx.host.open(liveness, { sessionId: 'killed-turn' })
    const { inputId } = await session.prompt('hello')
    await until(async () => (await ctx.redis.get(keys().modelCalls)) === '1', 'the turn inside its model call')
    const key = jobKey(ctx.prefix, 'liveness', 'killed-turn', { inputId })
    const runner = await holderOf(ctx.redis, key, pair)
    const killedAt = Date.now()
    await runner.kill('SIGKILL')
    await until(async () => (await ctx.redis.get(keys().modelCalls)) === '2', 'the turn to call its model again', 60_000)
    expect(Date.now() - killedAt).toBeLessThan(LOCK_MS / 2)
    const settled = await session.settled(inputId, { timeoutMs: patient(60_000) })
    expect(settled.outcome).toBe('completed')
    expect(records(await session.log.read(), 'harness.model.response')).toHaveLength(1)
    expect(await ctx.redis.hget(key, 'stc')).toBe('1')
  })
})

describe('a worker process stopped (SIGSTOP) for twice its lock', () => {
  const lockMs = 4_000
  const ctx = useWorkerProcesses({ label: 'liveness-stop', module: MODULE, harnesses: [liveness], workers: 0, concurrency: 2 })
  const keys = () => livenessKeys(ctx.prefix)

  it('fencing (DESIGN §3): it is not found gone while it holds its lock (its connections stay open), and once awake its attempt runs no side effect more: step b ran once', async () => {
    const pair = await Promise.all([
      ctx.spawn({ env: { LIVENESS_LOCK_MS: String(lockMs) } }),
      ctx.spawn({ env: { LIVENESS_LOCK_MS: String(lockMs) } }),
    ])
    ctx.workers.push(...pair)
    await armed(pair)
    const session = ctx.host.open(liveness, { sessionId: 'stopped-call' })
    // the first attempt waits 1.5 lockMs: in the stopped process that wait ends while it is stopped, so it goes on at once when woken
    const run = session.runTool({ name: 'hangOnce', input: { hangMs: 1.5 * lockMs }, toolCallId: 's-call' }, { timeoutMs: patient(60_000) })
    await until(async () => (await ctx.redis.get(keys().attempts)) === '1', 'the call inside its wait')
    const key = jobKey(ctx.prefix, 'liveness', 'stopped-call', { toolCallId: 's-call' })
    const stopped = await holderOf(ctx.redis, key, pair)
    const rescuer = pair.find((w) => w !== stopped)!
    stopped.proc.kill('SIGSTOP')
    const stoppedAt = Date.now()
    // a renewal sent just before the stop may still land: the lock's expiry once it no longer moves
    let expiresAt = 0
    await until(async () => {
      const now = Number(await ctx.redis.pexpiretime(`${key}:lock`))
      const same = now === expiresAt
      expiresAt = now
      return same
    }, 'the stopped worker lock expiry to settle')
    expect(await run).toEqual({ b: 1 })
    const started = startedOf(await session.log.read(), 's-call')
    expect(started.map((e) => e.record)).toMatchObject([{ reason: 'fresh' }, { reason: 'rerun', attempt: 2 }])
    // taken over only once its lock expired (BullMQ's stalled check), never found gone before
    expect(entryMs(started[1]!)).toBeGreaterThanOrEqual(expiresAt)
    expect(rescuer.lines.some((l) => l.msg === GONE)).toBe(false)
    await until(async () => Date.now() - stoppedAt >= 2 * lockMs, 'twice the lock to pass')
    stopped.proc.kill('SIGCONT')
    await stopped.waitFor((l) => l.toolCallId === 's-call' && l.msg === LOCK_LOST, patient(30_000))
    expect([await ctx.redis.get(keys().a), await ctx.redis.get(keys().b)]).toEqual(['1', '1'])
    expect(records(await session.log.read(), 'harness.tool.result')).toHaveLength(1)
  })
})
