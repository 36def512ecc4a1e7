// The shared set-ups of the integration tests: a host over worker processes for a describe block,
// and in-process hosts made per test. Each closes what it opened.
import type { PayloadCodec } from '../../src/codec/index.js'
import type { RedisClient } from '../../src/index.js'
import { pino } from 'pino'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { createHarnessHost, type Harness, type HarnessHost, type RetentionOptions } from '../../src/index.js'
import { shop } from '../fixtures/shop.js'
import { cleanupPrefix, getRedisUrl, uniquePrefix, rigClient, startPrivateRedis } from '../rig.js'
import type { RedisServerHandle } from '../../src/testing/index.js'
import { spawnWorker, type WorkerProcess } from './workerProcess.js'

export const quiet = pino({ level: process.env.DH_TEST_LOG ?? 'silent' })

export interface WorkerProcessesContext {
  url: string
  prefix: string
  /** A host in the test process (no workers of its own): it prompts, reads and answers. */
  host: HarnessHost
  /** A second such host with its own connections: another server of the same deployment. */
  other: HarnessHost
  /** A plain client for looking at keys (the shop fixture counts side effects under `${prefix}:billing`). */
  redis: RedisClient
  /** The worker processes; a test may kill some and push others, all are killed after the block. */
  workers: WorkerProcess[]
  /** Starts one more worker process with the block's module, Redis and prefix. */
  spawn(options?: { concurrency?: number; env?: Record<string, string> }): Promise<WorkerProcess>
}

/**
 * A describe block's host and `workers` worker processes of a harness module (default the shop
 * fixture), on a fresh key prefix. The fixture module reads REDIS_URL and DH_PREFIX, so they are set.
 */
export function useWorkerProcesses(options: {
  label: string
  harnesses?: Harness[]
  module?: string
  workers?: number
  concurrency?: number
  /** The hosts' codec; worker processes get theirs from `env` (DH_CODEC_KEYS) */
  codec?: PayloadCodec
  /** The environment of every worker process spawned */
  env?: Record<string, string>
}): WorkerProcessesContext {
  const ctx = { workers: [] as WorkerProcess[] } as unknown as WorkerProcessesContext
  // every process spawned is killed after the block, also one a test did not keep in ctx.workers
  const spawned: WorkerProcess[] = []
  ctx.spawn = async (o = {}) => {
    const worker = await spawnWorker({
      redisUrl: ctx.url,
      prefix: ctx.prefix,
      ...(options.module ? { module: options.module } : {}),
      ...((o.concurrency ?? options.concurrency) ? { concurrency: o.concurrency ?? options.concurrency } : {}),
      ...(o.env || options.env ? { env: { ...options.env, ...o.env } } : {}),
    })
    spawned.push(worker)
    return worker
  }
  beforeAll(async () => {
    ctx.url = await getRedisUrl()
    ctx.prefix = uniquePrefix(options.label)
    process.env.REDIS_URL = ctx.url
    process.env.DH_PREFIX = ctx.prefix
    const common = { redis: ctx.url, harnesses: options.harnesses ?? [shop], prefix: ctx.prefix, logger: quiet }
    ctx.host = createHarnessHost({ ...common, ...(options.codec ? { codec: options.codec } : {}) })
    ctx.other = createHarnessHost({ ...common, ...(options.codec ? { codec: options.codec } : {}) })
    ctx.redis = rigClient(ctx.url)
    for (let i = 0; i < (options.workers ?? 2); i++) ctx.workers.push(await ctx.spawn())
  })
  afterAll(async () => {
    await Promise.all([...ctx.workers, ...spawned].map((w) => w.kill('SIGKILL')))
    await ctx.host?.close()
    await ctx.other?.close()
    ctx.redis?.disconnect()
    if (ctx.prefix) await cleanupPrefix(ctx.url, ctx.prefix)
  })
  return ctx
}

/** Hosts with in-process workers, one per call of `start`, closed after each test. */
export function useInProcessHosts(): {
  start(
    harness: Harness | Harness[],
    label: string,
    options?: {
      redis?: string
      writeRetryMs?: number
      concurrency?: number
      retention?: RetentionOptions
      localLane?: boolean
      codec?: PayloadCodec
    },
  ): { host: HarnessHost; prefix: string; url: string }
  /** Closed after the test too (a client, a second host). */
  defer(close: () => Promise<unknown> | unknown): void
  /** The shared Redis of the tests. */
  url(): string
} {
  let url: string
  const closers: Array<() => Promise<unknown> | unknown> = []
  beforeAll(async () => {
    url = await getRedisUrl()
  })
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await Promise.resolve(close()).catch(() => {})
  })
  return {
    start(harness, label, options = {}) {
      const prefix = uniquePrefix(label)
      const redis = options.redis ?? url
      const host = createHarnessHost({
        redis,
        harnesses: Array.isArray(harness) ? harness : [harness],
        prefix,
        logger: quiet,
        ...(options.writeRetryMs ? { writeRetryMs: options.writeRetryMs } : {}),
        ...(options.retention ? { retention: options.retention } : {}),
        ...(options.localLane === undefined ? {} : { localLane: options.localLane }),
        ...(options.codec ? { codec: options.codec } : {}),
      })
      const workers = host.startWorkers({ concurrency: options.concurrency ?? 4, sweepEveryMs: 0 })
      closers.push(
        () => host.close(),
        () => workers.close(),
      )
      return { host, prefix, url: redis }
    },
    defer(close) {
      closers.push(close)
    },
    url: () => url,
  }
}

/** A private redis-server with an AOF for a describe block, started before it and stopped after: `server()` is it. */
export function usePrivateRedis(): () => RedisServerHandle {
  let server: RedisServerHandle | undefined
  beforeAll(async () => {
    server = await startPrivateRedis()
  })
  afterAll(async () => {
    await server?.stop()
  })
  return () => server!
}

/** Redis crashes (SIGKILL) and comes back from its AOF: the test then waits for what it reads to answer again. */
export async function crashRedis(server: RedisServerHandle): Promise<void> {
  await server.kill()
  await new Promise((resolve) => setTimeout(resolve, 300))
  await server.restart()
}
