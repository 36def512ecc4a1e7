// Worker liveness across a Redis restart (a private redis-server, AOF): every connection closes, and
// the processes reconnect one by one. No process is found gone meanwhile (a process checks others
// only once its own connections to that Redis are RECONNECT_MS old), so a call whose worker lives
// is not moved; once they are all back, a SIGKILL is found as fast as before. The state the check
// keeps in Redis is one claim key a shard (PX 900 ms), which a restart may lose at no cost.
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarnessHost, type HarnessHost } from '../../src/index.js'
import type { RedisServerHandle } from '../../src/testing/index.js'
import { livenessKeys, liveness } from '../fixtures/liveness.js'
import { armed, entryMs, holderOf, jobKey, startedOf } from '../helpers/liveness.js'
import { until } from '../helpers/log.js'
import { patient } from '../helpers/patience.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { rigClient, startPrivateRedis, uniquePrefix } from '../rig.js'
import type { RedisClient } from '../../src/index.js'

const MODULE = 'test/fixtures/liveness.ts'
const LOCK_MS = 30_000
const GONE = 'worker process gone: job moved back to wait'

describe('worker liveness across a Redis restart', () => {
  let server: RedisServerHandle
  let host: HarnessHost
  let redis: RedisClient
  const workers: WorkerProcess[] = []
  const prefix = uniquePrefix('liveness-restart')

  beforeAll(async () => {
    server = await startPrivateRedis()
    host = createHarnessHost({ redis: server.url, harnesses: [liveness], prefix, logger: pino({ level: 'silent' }) })
    redis = rigClient(server.url, { maxRetriesPerRequest: null })
  })
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await host?.close({ timeoutMs: 5_000 })
    redis?.disconnect()
    await server?.stop()
  })

  it('R10: a call whose worker lives is not moved while the processes reconnect after a restart; a SIGKILL after it is found within seconds', async () => {
    const env = { REDIS_URL: server.url }
    const spawn = () => spawnWorker({ redisUrl: server.url, prefix, module: MODULE, concurrency: 2, env })
    workers.push(...(await Promise.all([spawn(), spawn()])))
    await armed(workers)
    const keys = livenessKeys(prefix)
    const session = host.open(liveness, { sessionId: 'restart-call' })
    const run = session.runTool({ name: 'hangOnce', input: { hangMs: 3_600_000 }, toolCallId: 'r-call' }, { timeoutMs: patient(120_000) })
    await until(async () => (await redis.get(keys.attempts)) === '1', 'the call inside its wait')
    const key = jobKey(prefix, 'liveness', 'restart-call', { toolCallId: 'r-call' })
    const runner = await holderOf(redis, key, workers)

    await server.kill()
    await server.restart()
    const restartedAt = Date.now()
    // the holder renews its lock again (it reconnected), and every process has been back long enough to check the others
    const token = await redis.get(`${key}:lock`)
    await until(
      async () => (await redis.pttl(`${key}:lock`)) > LOCK_MS / 2 && (await redis.get(`${key}:lock`)) === token,
      'the lock renewed after the restart',
      60_000,
    )
    await until(async () => Date.now() - restartedAt >= 8_000, 'the processes to have checked each other for a while')
    expect(startedOf(await session.log.read(), 'r-call')).toHaveLength(1)
    expect(workers.some((w) => w.lines.some((l) => l.msg === GONE))).toBe(false)

    const killedAt = Date.now()
    await runner.kill('SIGKILL')
    expect(await run).toEqual({ b: 1 })
    const started = startedOf(await session.log.read(), 'r-call')
    expect(started.map((e) => e.record)).toMatchObject([{ reason: 'fresh' }, { reason: 'rerun', attempt: 2 }])
    expect(entryMs(started[1]!) - killedAt).toBeLessThan(LOCK_MS / 2)
  })
})
