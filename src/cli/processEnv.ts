import type { Logger } from 'pino'
import { DurableHarnessError } from '../errors.js'
import { createHarnessHost, type HarnessHost } from '../harness/host.js'
import { createLogger } from '../logger.js'
import { loadHarnesses } from './loadHarnesses.js'

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'

/**
 * Shared start-up of the worker and sweeper processes: load the harness module, connect, and stop
 * gracefully on SIGTERM/SIGINT. A bad start prints one clear line and exits 1, with no stack trace.
 */
export async function startProcess(
  role: string,
  argv: string[],
  run: (host: HarnessHost, logger: Logger) => { close(): Promise<void> },
): Promise<void> {
  const logger = createLogger().child({ role })
  let host: HarnessHost | undefined
  try {
    const harnesses = await loadHarnesses(argv[0] ?? process.env.HARNESS_MODULE)
    host = createHarnessHost({ redis: process.env.REDIS_URL ?? DEFAULT_REDIS_URL, harnesses, prefix: process.env.DH_PREFIX ?? 'dh', logger })
    await host.ready()
    const running = run(host, logger)
    logger.info({ harnesses: harnesses.map((h) => h.name), prefix: host.prefix }, `${role} started`)
    let stopping = false
    const stop = async (signal: string) => {
      if (stopping) return
      stopping = true
      logger.info({ signal }, `${role} stopping: finishing active jobs`)
      await running.close()
      await host!.close()
      logger.info(`${role} stopped`)
      process.exit(0)
    }
    process.on('SIGTERM', () => void stop('SIGTERM'))
    process.on('SIGINT', () => void stop('SIGINT'))
  } catch (error) {
    const message = error instanceof DurableHarnessError ? error.message : `${role} failed to start: ${(error as Error).message}`
    process.stderr.write(`${message}\n`)
    await host?.close().catch(() => {})
    process.exit(1)
  }
}
