import { DEFAULT_REDIS_URL } from '../../src/cli/processEnv.js'
import { hasRedisServerBinary, isRedisReachable, startRedisServer } from '../../src/testing/index.js'

/**
 * The Redis a script runs against: REDIS_URL (default redis://127.0.0.1:6379) when it answers, else an
 * embedded private redis-server on a free port (stopped on exit) when the binary is installed, else one
 * clear line and exit 1.
 */
export async function resolveRedis(log: (line: string) => void): Promise<{ url: string; stop(): Promise<void> }> {
  const url = process.env.REDIS_URL ?? DEFAULT_REDIS_URL
  if (await isRedisReachable(url)) return { url, stop: async () => {} }
  if (!process.env.REDIS_URL && hasRedisServerBinary()) {
    const server = await startRedisServer({ appendonly: true })
    log(`No Redis at ${url}; started an embedded redis-server at ${server.url} (stopped on exit).`)
    return { url: server.url, stop: () => server.stop() }
  }
  process.stderr.write(`Cannot reach Redis at ${url}. Start one with: docker compose up -d redis (or set REDIS_URL).\n`)
  process.exit(1)
}
