import type { Logger } from 'pino'
import { redactCredentials } from '../credentials.js'
import { ConfigError, DurableHarnessError } from '../errors/index.js'
import { parseClusterNodes, type RedisConnection } from '../harness/connection.js'
import { createHarnessHost, type CloseOptions, type CloseResult, type HarnessHost } from '../harness/host.js'
import type { Harness } from '../harness/defineHarness.js'
import { createLogger } from '../logger.js'
import { serveMetrics } from '../telemetry/index.js'
import { loadHostModule } from './loadHarnesses.js'
import { messageOf, stringOption, type CommandInput } from './command.js'
import { terminalSafe } from '../terminalText.js'

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'
/** Time SIGTERM gives active jobs; below docker compose's stop_grace_period (30 s), so we leave before SIGKILL. */
const DEFAULT_SHUTDOWN_GRACE_MS = 25_000

/** A duration in ms from the environment variable `name`: `fallback` when unset, a ConfigError when it is no whole number of 0 or more. */
export function msFromEnv(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const ms = Number(raw)
  if (!Number.isInteger(ms) || ms < 0)
    throw new ConfigError(`${name} must be a whole number of milliseconds (0 or more), not ${JSON.stringify(terminalSafe(raw))}.`)
  return ms
}

const shutdownGraceMs = () => msFromEnv('SHUTDOWN_GRACE_MS', DEFAULT_SHUTDOWN_GRACE_MS)

function metricsPort(raw: string): number {
  const port = Number(raw)
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new ConfigError(`METRICS_PORT must be a port number (0 picks a free one), not ${JSON.stringify(raw)}.`)
  return port
}

/** REDIS_CLUSTER_NODES (a Cluster's seed nodes, comma-separated) if set, else REDIS_URL. */
export function redisFromEnv(): { redis: RedisConnection; shown: string } {
  const nodes = process.env.REDIS_CLUSTER_NODES
  if (nodes) return { redis: parseClusterNodes(nodes), shown: `cluster ${redactCredentials(nodes)}` }
  const url = process.env.REDIS_URL ?? DEFAULT_REDIS_URL
  return { redis: url, shown: redactCredentials(url) }
}

/** REDIS_WAIT_REPLICAS (and REDIS_WAIT_MS, default 200): step and result writes wait for that many replicas. */
function waitReplicasFromEnv(): { waitReplicas: { replicas: number; timeoutMs: number } } | Record<string, never> {
  const raw = process.env.REDIS_WAIT_REPLICAS
  if (raw === undefined || raw === '' || raw === '0') return {}
  const replicas = Number(raw)
  const timeoutMs = Number(process.env.REDIS_WAIT_MS ?? 200)
  if (!Number.isInteger(replicas) || replicas < 0 || !Number.isInteger(timeoutMs) || timeoutMs < 1)
    throw new ConfigError(
      `REDIS_WAIT_REPLICAS must be a whole number of replicas and REDIS_WAIT_MS of milliseconds, not ${JSON.stringify(raw)} / ${JSON.stringify(process.env.REDIS_WAIT_MS)}.`,
    )
  return { waitReplicas: { replicas, timeoutMs } }
}

/** WORKER_SHARDS: the shards a worker process serves (comma-separated shard numbers); unset: all. */
export function workerShards(): number[] | undefined {
  const raw = process.env.WORKER_SHARDS
  if (raw === undefined || raw.trim() === '') return undefined
  const shards = raw.split(',').map((p) => Number(p.trim()))
  if (shards.some((n) => !Number.isInteger(n) || n < 0))
    throw new ConfigError(`WORKER_SHARDS must be shard numbers separated by commas (e.g. 0,2), not ${JSON.stringify(raw)}.`)
  return shards
}

/** The processes read their settings from the environment: flags given on the command line win. */
export function flagsToEnv(values: CommandInput['values'], names: Record<string, string>): void {
  for (const [flag, env] of Object.entries(names)) {
    const value = stringOption(values, flag)
    if (value !== undefined) process.env[env] = value
  }
}

/**
 * Shared start-up of the worker and sweeper processes: load the harness module, connect, and stop on
 * SIGTERM/SIGINT: active jobs get SHUTDOWN_GRACE_MS to finish, then the process leaves anyway (exit 1).
 * A bad start prints one clear line and exits 1, with no stack trace.
 */
export async function startProcess(
  role: string,
  argv: string[],
  run: (host: HarnessHost, logger: Logger, harnesses: readonly Harness[]) => { close(options?: CloseOptions): Promise<CloseResult | void> },
): Promise<void> {
  const logger = createLogger().child({ role })
  // whatever escapes is logged through the redacting serializer (an ioredis error carries the AUTH
  // arguments, password included), never printed raw by Node, and ends the process
  for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
    process.on(event, (err) => {
      logger.fatal({ err }, `${role}: ${event}; exiting`)
      process.exit(1)
    })
  }
  let host: HarnessHost | undefined
  try {
    const graceMs = shutdownGraceMs()
    const { harnesses, retention, codec } = await loadHostModule(argv[0] ?? process.env.HARNESS_MODULE)
    const { redis, shown } = redisFromEnv()
    host = createHarnessHost({
      redis,
      harnesses,
      prefix: process.env.DH_PREFIX ?? 'dh',
      logger,
      ...waitReplicasFromEnv(),
      ...(retention === undefined ? {} : { retention }),
      ...(codec ? { codec } : {}),
    })
    await host.ready()
    const running = run(host, logger, harnesses)
    const metrics = process.env.METRICS_PORT ? await serveMetrics(host, metricsPort(process.env.METRICS_PORT)) : undefined
    logger.info(
      { harnesses: harnesses.map((h) => h.name), prefix: host.prefix, redis: shown, graceMs, metricsPort: metrics?.port },
      `${role} started`,
    )
    let stopping = false
    const stop = async (signal: string) => {
      if (stopping) return
      stopping = true
      logger.info({ signal, graceMs }, `${role} stopping: finishing active jobs`)
      metrics?.close()
      const deadline = Date.now() + graceMs
      const left = () => Math.max(0, deadline - Date.now())
      // the closes below are bounded; this is the backstop if anything else hangs
      setTimeout(() => {
        logger.error({ graceMs }, `${role} did not stop within the grace period; exiting`)
        process.exit(1)
      }, graceMs + 2_000).unref()
      const forced = [...((await running.close({ timeoutMs: left() }))?.forced ?? []), ...(await host!.close({ timeoutMs: left() })).forced]
      if (forced.length > 0) {
        logger.warn(
          { graceMs, forced },
          `${role} stopped by force: workers still closing after the grace period were abandoned (their jobs run again once their locks expire)`,
        )
        process.exit(1)
      }
      logger.info(`${role} stopped`)
      process.exit(0)
    }
    process.on('SIGTERM', () => void stop('SIGTERM'))
    process.on('SIGINT', () => void stop('SIGINT'))
  } catch (error) {
    const message = error instanceof DurableHarnessError ? error.message : `${role} failed to start: ${messageOf(error)}`
    process.stderr.write(`${terminalSafe(redactCredentials(message))}\n`)
    await host?.close({ timeoutMs: 1_000 }).catch(() => {})
    process.exit(1)
  }
}
