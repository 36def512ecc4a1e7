import { pino } from 'pino'
import { serializeError } from '../credentials.js'
import { UsageError } from '../errors/index.js'
import { createHarnessHost, type HarnessHost } from '../harness/host.js'
import { stringOption } from './command.js'
import { loadHostModule, type HostModule } from './loadHarnesses.js'
import { codecFromEnv } from './codecEnv.js'
import { jsonText } from '../terminalText.js'
import { redisFromEnv } from './processEnv.js'

type Values = Record<string, string | boolean | undefined>

/** The module to load: --module, else HARNESS_MODULE; `needed` makes a missing one a usage error. */
export async function harnessesFrom(values: Values, needed: boolean): Promise<HostModule> {
  const specifier = stringOption(values, 'module') ?? process.env.HARNESS_MODULE
  if (!specifier) {
    if (needed) throw new UsageError('This command needs the harness module: pass --module <path-or-package> or set HARNESS_MODULE.')
    // without a module, the environment's codec still opens what the log holds (docs/encryption.md)
    const codec = codecFromEnv()
    return { harnesses: [], ...(codec ? { codec } : {}) }
  }
  return loadHostModule(specifier)
}

/**
 * A host for one CLI command, from --redis/--prefix (or REDIS_URL or REDIS_CLUSTER_NODES, DH_PREFIX; DH_SHARDS): it checks Redis answers
 * first. Its logs go to stderr at LOG_LEVEL (default warn), so stdout carries only the command's output.
 */
export async function connect(values: Values, { harnesses, codec }: HostModule): Promise<HarnessHost> {
  const logger = pino(
    { level: process.env.LOG_LEVEL ?? 'warn', serializers: { err: serializeError }, hooks: { streamWrite: jsonText } },
    pino.destination(2),
  )
  const host = createHarnessHost({
    redis: typeof values.redis === 'string' ? values.redis : redisFromEnv().redis,
    prefix: stringOption(values, 'prefix') ?? process.env.DH_PREFIX ?? 'dh',
    harnesses,
    logger,
    ...(codec ? { codec } : {}),
  })
  try {
    await host.ready()
  } catch (error) {
    await host.close({ timeoutMs: 1_000 })
    throw error
  }
  return host
}

/** Runs `fn` with a connected host and closes it after. */
export async function withHost<T>(values: Values, needsModule: boolean, fn: (host: HarnessHost) => Promise<T>): Promise<T> {
  const host = await connect(values, await harnessesFrom(values, needsModule))
  try {
    return await fn(host)
  } finally {
    await host.close({ timeoutMs: 5_000 })
  }
}
