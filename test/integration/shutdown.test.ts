// Bounded shutdown and credentials: a worker process leaves within SHUTDOWN_GRACE_MS on SIGTERM even when
// BullMQ's graceful close hangs (after a refused password), and the Redis password is never printed.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RedisServerHandle } from '../../src/testing/redisServer.js'
import { spawnWorker, type WorkerProcess } from '../helpers/workerProcess.js'
import { createHarnessHost } from '../../src/index.js'
import { shop } from '../fixtures/shop.js'
import { quiet } from '../helpers/hosts.js'
import { patient } from '../helpers/patience.js'
import { startPrivateRedis, uniquePrefix } from '../rig.js'

const PASSWORD = 'pw-5f3a9c1e-original'
const OTHER = 'pw-0b7d2e44-changed'
const GRACE_MS = 3_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** CPU ticks the process used (utime + stime, /proc/<pid>/stat), or undefined off Linux. */
function cpuTicks(pid: number | undefined): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return undefined
  }
}

/**
 * SIGTERMs the worker and returns its exit code, or 'still running' when it has not left within the
 * grace period plus a generous margin, scaled by the machine's load (a liveness guard, not a speed
 * bound: test/helpers/patience.ts); then makes sure it is gone. A worker still running is described
 * (CPU it used in the last second: a spinning loop or a wait; its last log lines) for the failure.
 * Waits for 'close', not 'exit': its last lines are read by then.
 */
async function terminate(worker: WorkerProcess): Promise<{ code: number | null | 'still running'; why: string }> {
  const exited = new Promise<number | null>((resolve) => worker.proc.once('close', (code) => resolve(code)))
  worker.proc.kill('SIGTERM')
  let guard: NodeJS.Timeout | undefined
  const code = await Promise.race([
    exited,
    new Promise<'still running'>((resolve) => (guard = setTimeout(() => resolve('still running'), patient(GRACE_MS + 15_000)))),
  ])
  clearTimeout(guard)
  let why = ''
  if (code === 'still running') {
    const before = cpuTicks(worker.proc.pid)
    await sleep(1_000)
    const after = cpuTicks(worker.proc.pid)
    const recent = worker.lines
      .slice(-12)
      .map((l) => `${String(l.time)} ${String(l.msg)}${l.err ? ` (${JSON.stringify(l.err).slice(0, 200)})` : ''}`)
    why = `still running ${patient(GRACE_MS + 15_000)} ms after SIGTERM; CPU ticks in the last second: ${String(before !== undefined && after !== undefined ? after - before : '?')}; last lines:\n${recent.join('\n')}\nstderr: ${worker.stderr.slice(-500)}`
  }
  await worker.kill('SIGKILL')
  return { code, why }
}

// each test starts a worker process (tsx compiles the library: tens of seconds on a loaded machine)
// before it times anything, so the tests get longer than the suite's default
describe('worker shutdown and Redis credentials', { timeout: patient(150_000) }, () => {
  let server: RedisServerHandle
  beforeAll(async () => {
    server = await startPrivateRedis({ appendonly: false, password: PASSWORD })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('SIGTERM after WRONGPASS: the worker exits within the grace period', async () => {
    expect(server.url).toContain(PASSWORD)
    const worker = await spawnWorker({
      redisUrl: server.url,
      prefix: uniquePrefix('shutdown'),
      env: { SHUTDOWN_GRACE_MS: String(GRACE_MS) },
    })
    const admin = new Redis(server.url, { retryStrategy: () => null })
    try {
      // idle and connected: both workers (turns, tools) wait for jobs in BZPOPMIN
      while (((await admin.client('LIST')) as string).split('\n').filter((c) => c.includes('cmd=bzpopmin')).length < 2) await sleep(50)
      // the blip: its connections are cut and every reconnect is refused, long enough for ioredis's
      // reconnect backoff to grow to seconds
      await admin.config('SET', 'requirepass', OTHER)
      expect(await admin.call('CLIENT', 'KILL', 'TYPE', 'normal')).toBeGreaterThan(0)
      // the server is refusing its reconnects
      while (((await admin.call('ACL', 'LOG')) as unknown[]).length === 0) await sleep(50)
      await sleep(8_000)
      await admin.config('SET', 'requirepass', PASSWORD)
    } finally {
      admin.disconnect()
    }
    // at once, while its blocking connections still wait out that backoff: BullMQ's graceful close of
    // such a worker never ends, so only the grace period gets the process out
    const { code, why } = await terminate(worker)
    expect(code, why).not.toBe('still running')
    // exit 0 after a graceful stop, 1 after a forced one, and the last line says which
    const last = worker.lines.at(-1)!
    if (code === 0) expect(last.msg).toBe('worker stopped')
    else {
      expect(code).toBe(1)
      expect(last.msg).toMatch(/^worker stopped by force/)
      expect((last.forced as string[]).length).toBeGreaterThan(0)
    }
    // the URL is printed (start-up line, reconnect warnings), its password never is
    const output = JSON.stringify(worker.lines) + worker.stderr
    expect(worker.lines.find((l) => l.msg === 'worker started')?.redis).toBe(server.url.replace(PASSWORD, '***'))
    expect(output).not.toContain(PASSWORD)
  })

  it('credentials refused right after start: the workers back off instead of spinning, and SIGTERM still ends the process', async () => {
    const worker = await spawnWorker({ redisUrl: server.url, prefix: uniquePrefix('spin'), env: { SHUTDOWN_GRACE_MS: String(GRACE_MS) } })
    const admin = new Redis(server.url, { retryStrategy: () => null })
    try {
      // at once, before the workers are idle in BZPOPMIN: BullMQ would retry each refused fetch at once
      await admin.config('SET', 'requirepass', OTHER)
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal')
      await sleep(3_000)
      // SIGTERM while every reconnect is still refused: a spinning event loop would never run its handler
      const { code, why } = await terminate(worker)
      expect(code, why).not.toBe('still running')
      // it left because of the SIGTERM, not because something escaped (a refused subscription once did)
      expect(worker.lines.filter((l) => /uncaughtException|unhandledRejection/.test(String(l.msg)))).toEqual([])
      expect(worker.lines.some((l) => l.msg === 'worker stopping: finishing active jobs')).toBe(true)
      expect(JSON.stringify(worker.lines) + worker.stderr).not.toContain(PASSWORD)
    } finally {
      const restore = new Redis(server.url.replace(PASSWORD, OTHER))
      await restore.config('SET', 'requirepass', PASSWORD).catch(() => {})
      restore.disconnect()
      admin.disconnect()
    }
  })

  it('a wrong password in REDIS_URL: one "authentication failed" line, exit 1, the password not printed', async () => {
    const wrongUrl = server.url.replace(PASSWORD, OTHER)
    const proc = spawn(process.execPath, ['--import', 'tsx', 'workers/worker.ts', 'test/fixtures/shop.ts'], {
      env: { ...process.env, REDIS_URL: wrongUrl, DH_PREFIX: uniquePrefix('wrongpass'), LOG_JSON: '1', LOG_LEVEL: 'debug' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => proc.once('close', (c) => resolve(c)))
    expect(code).toBe(1)
    expect(stdout).toBe('')
    const lines = stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('authentication failed')
    expect(lines[0]).toContain('Check the user and password in REDIS_URL')
    expect(lines[0]).toContain(wrongUrl.replace(OTHER, '***'))
    expect(lines[0]).not.toContain('Cannot reach Redis')
    expect(stderr).not.toContain(OTHER)
  })
})

describe('closing workers after a Redis restart', { timeout: patient(120_000) }, () => {
  it('a blocking connection still waiting out its reconnect backoff when Redis is back: workers.close() resolves and forces nothing (bullmq#4656)', async () => {
    const server = await startPrivateRedis({ appendonly: false })
    const host = createHarnessHost({ redis: server.url, harnesses: [shop], prefix: uniquePrefix('close-backoff'), logger: quiet })
    const workers = host.startWorkers({ concurrency: 2, sweepEveryMs: 0 })
    try {
      const blocking = await Promise.all(workers.workers.map(async (w) => (await w.waitUntilReady(), w.backend.blockingConnection!.client)))
      await server.kill()
      // BullMQ's backoff grows to seconds after a few refused tries: wait until every blocking connection is in one
      while ((await Promise.all(blocking)).some((c) => c.status !== 'reconnecting')) await sleep(50)
      await sleep(3_000)
      await server.restart()
      // a close left waiting for an 'end' never settles: the test's own timeout is the bound
      expect(await workers.close()).toEqual({ forced: [] })
      expect((await Promise.all(blocking)).map((c) => c.status)).toEqual(blocking.map(() => 'end'))
    } finally {
      await host.close()
      await server.stop()
    }
  })
})
