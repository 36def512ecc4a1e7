// Deploys during an event wait or a step retry's backoff (docs/deploys.md, the change table's wait
// rows): calls park under v1 in a worker process; `harness check-deploy` and `replaySession` flag each
// changed wait (`wait_changed`) and each parked step v2 does not reach (`step_not_reached`); then the
// v1 worker is SIGKILLed, the events are sent to the addresses the calls registered, and a v2 worker
// wakes them: each call takes the payload delivered to its old address, none is lost.
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkDeploy } from '../../src/deploys/index.js'
import { createHarnessHost, type HarnessHost, type Session } from '../../src/index.js'
import { callWaitMember, eventAddressId, EventWaits, SessionLog } from '../../src/log/index.js'
import { replaySession, type DeployProblem } from '../../src/testing/index.js'
import { waitDeployHarness, WAIT_ROWS } from '../fixtures/waitDeploys.js'
import { runBin } from '../helpers/cli.js'
import { until } from '../helpers/log.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { cleanupPrefix, getRedisUrl, uniquePrefix } from '../rig.js'
import { patient } from '../helpers/patience.js'

const silent = pino({ level: 'silent' })
const MODULE = 'test/fixtures/waitDeploys.ts'
const ROWS = [...WAIT_ROWS, 'retryName'] as const
/** Each row's order number: its event address is `payment.settled` / `order-<n>` under v1. */
const N: Record<(typeof ROWS)[number], number> = { steady: 1, waitKey: 2, waitEvent: 3, waitName: 4, retryName: 5 }

describe('deploys during an event wait or a retry backoff', () => {
  let url: string
  let redis: Redis
  const prefix = uniquePrefix('waitdeploys')
  const v1 = waitDeployHarness('v1')
  const v2 = waitDeployHarness('v2')
  let host: HarnessHost
  let worker: WorkerProcess | undefined
  const sessions = new Map<string, Session>()
  const results = new Map<string, Promise<unknown>>()

  beforeAll(async () => {
    url = await getRedisUrl()
    redis = new Redis(url)
    host = createHarnessHost({ redis: url, harnesses: [v1], prefix, logger: silent })
    worker = await spawnWorker({ redisUrl: url, prefix, module: MODULE, env: { DEPLOY_CODE: 'v1' } })
    for (const row of ROWS) {
      const session = host.open(v1, { sessionId: `s-${row}` })
      sessions.set(row, session)
      const call = session.runTool({ name: row, input: { n: N[row] }, toolCallId: `c-${row}` }, { timeoutMs: 600_000 })
      results.set(
        row,
        call.catch((error: unknown) => ({ error })),
      )
    }
    await until(async () => {
      const states = await Promise.all(ROWS.map((row) => new SessionLog(redis, prefix, `s-${row}`).calls.getCall(`c-${row}`)))
      return states.every((s) => s?.status === 'parked')
    }, 'every v1 call to park')
  }, 180_000)
  afterAll(async () => {
    await worker?.kill('SIGKILL')
    await host?.close()
    await cleanupPrefix(url, prefix)
    redis?.disconnect()
  })

  it('check-deploy flags a changed wait (wait_changed) and a parked wait or retry v2 does not reach (step_not_reached)', async () => {
    const report = await checkDeploy({ redis: url, prefix, harnesses: [v2] })
    const byRow = (row: string) => report.problems.filter((p) => p.tool === row).map((p) => `${p.code} ${p.step ?? ''}`.trim())
    expect(byRow('steady')).toEqual([])
    expect(byRow('waitKey')).toEqual(['wait_changed paid'])
    expect(byRow('waitEvent')).toEqual(['wait_changed paid'])
    expect(byRow('waitName')).toEqual(['step_not_reached paid'])
    expect(byRow('retryName')).toEqual(['step_not_reached charge'])
    const changed = report.problems.find((p) => p.tool === 'waitKey')!
    expect(changed).toMatchObject({ sessionId: 's-waitKey', toolCallId: 'c-waitKey' })
    expect(changed.message).toContain('"order-2"')
    expect(changed.message).toContain('"order:2"')
    expect(report.problems.find((p) => p.tool === 'retryName')!.message).toContain('retry')
    // the same check for one session (durable-harness/testing), and v1 itself passes
    expect((await replaySession({ redis: url, prefix, sessionId: 's-waitEvent', harness: v2 })).problems.map((p) => p.code)).toEqual([
      'wait_changed',
    ])
    expect((await checkDeploy({ redis: url, prefix, harnesses: [v1] })).problems).toEqual([])
    // the CLI's JSON lines have the shape of every other problem
    const cli = await runBin(['check-deploy', MODULE, '--json'], { REDIS_URL: url, DH_PREFIX: prefix, DEPLOY_CODE: 'v2' })
    expect(cli.code, cli.stderr).toBe(1)
    const lines = cli.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as DeployProblem & { problems?: number })
      .filter((p) => p.problems === undefined)
    expect(lines.find((p) => p.tool === 'waitKey')).toEqual({
      code: 'wait_changed',
      sessionId: 's-waitKey',
      toolCallId: 'c-waitKey',
      tool: 'waitKey',
      step: 'paid',
      message: changed.message,
    })
  }, 120_000)

  it('SIGKILL under v1, events sent to the old addresses, v2 wakes the calls: each takes its payload, none is lost', async () => {
    await worker!.kill('SIGKILL')
    worker = undefined
    for (const row of WAIT_ROWS) {
      const sent = await host.sendEvent({ event: 'payment.settled', key: `order-${N[row]}`, payload: { amount: N[row] } })
      expect(sent, row).toMatchObject({ status: 'delivered', calls: 1 })
    }
    // waitKey's wait as an older version stored it (no address id): the new code finds its address in the log
    const steps = new SessionLog(redis, prefix, 's-waitKey').stream.keys.steps
    const field = 'c-waitKey\0harness.wait:paid'
    const { until: waitUntil } = JSON.parse((await redis.hget(steps, field))!) as { until: number; ev: string }
    await redis.hset(steps, field, JSON.stringify({ until: waitUntil }))
    worker = await spawnWorker({ redisUrl: url, prefix, module: MODULE, env: { DEPLOY_CODE: 'v2' } })
    for (const row of WAIT_ROWS) expect(await results.get(row), row).toEqual({ amount: N[row] })
    // the moved payload is the step's value under the new wait, logged as its event
    const events = (await sessions.get('waitName')!.log.read({ types: ['harness.tool.event'] })).map((e) => e.record)
    expect(events).toEqual([expect.objectContaining({ name: 'paid-v2', event: 'payment.settled', key: 'order-4', payload: { amount: 4 } })])
    // the old address holds nothing any more: a later send there is kept, it wakes nobody
    expect(await host.sendEvent({ event: 'payment.settled', key: 'order-2', payload: { amount: 0 } })).toMatchObject({
      status: 'stored',
      calls: 0,
    })
  }, 90_000)
})

describe('a payload moving to a renamed wait survives a crash of the attempt that moves it', () => {
  it('the old wait hands its payload out until it is stored: a worker that died after the hand-out leaves it for the next attempt', async () => {
    const url = await getRedisUrl()
    const prefix = uniquePrefix('waitmove')
    const redis = new Redis(url)
    const v1 = waitDeployHarness('v1')
    const v2 = waitDeployHarness('v2')
    const first = createHarnessHost({ redis: url, harnesses: [v1], prefix, logger: silent })
    const second = createHarnessHost({ redis: url, harnesses: [v2], prefix, logger: silent })
    try {
      const workers = first.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
      const log = new SessionLog(redis, prefix, 's-move')
      const result = second
        .open(v2, { sessionId: 's-move' })
        .runTool({ name: 'waitName', input: { n: 9 }, toolCallId: 'c-move' }, { timeoutMs: patient(60_000) })
      await until(async () => (await log.calls.getCall('c-move'))?.status === 'parked', 'the v1 call to park')
      await workers.close()
      expect(await second.sendEvent({ event: 'payment.settled', key: 'order-9', payload: { amount: 9 } })).toMatchObject({ calls: 1 })
      // what a v2 attempt does first and then dies: the old wait hands out its payload, nothing is stored yet
      const waits = new EventWaits(redis, prefix)
      const old = eventAddressId({ event: 'payment.settled', key: 'order-9' })
      const member = callWaitMember('s-move', 'c-move', 'paid')
      expect(await waits.leave(old, member)).toEqual({ status: 'event', payload: { amount: 9 } })
      // the next attempt (a v2 worker) takes it again and stores it under the renamed wait
      second.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
      expect(await result).toEqual({ amount: 9 })
      expect(await redis.exists(waits.keyOfId(old))).toBe(0)
    } finally {
      await first.close()
      await second.close()
      await cleanupPrefix(url, prefix)
      redis.disconnect()
    }
  }, 60_000)
})
