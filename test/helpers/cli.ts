// The `harness` CLI as a child process, for the CLI tests: its source (src/cli/main.ts) through tsx, so a
// test runs the code as it is now, without a build. The bin on the compiled CLI (bin/harness.js) is
// tested from an installed tarball (test/integration/package.test.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createHarnessHost, type HarnessHost } from '../../src/index.js'
import { ops } from '../fixtures/ops.js'
import { cleanupPrefix, getRedisUrl, uniquePrefix } from '../rig.js'
import { quiet } from './hosts.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const CLI = ['--import', 'tsx', 'src/cli/main.ts']

export interface BinResult {
  code: number | null
  stdout: string
  stderr: string
}

function start(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [...CLI, ...args], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/** Runs the bin to its end. */
export function runBin(args: string[], env: Record<string, string> = {}): Promise<BinResult> {
  const proc = start(args, env)
  let stdout = ''
  let stderr = ''
  proc.stdout!.on('data', (c: Buffer) => (stdout += c.toString()))
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, stdout, stderr })))
}

/** A bin that keeps running (log --follow, worker): its output so far, a wait for a line, its end. */
export function spawnBin(args: string[], env: Record<string, string> = {}) {
  const proc = start(args, env)
  let stdout = ''
  let stderr = ''
  const waiters = new Set<() => void>()
  proc.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString()
    for (const w of waiters) w()
  })
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
  const closed = new Promise<number | null>((resolve) => proc.once('close', (code) => resolve(code)))
  return {
    proc,
    get stdout() {
      return stdout
    },
    get stderr() {
      return stderr
    },
    /** Resolves with the first stdout line that matches, past or future; rejects if the bin exits first. */
    waitForLine(match: (line: string) => boolean): Promise<string> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = stdout.split('\n').find(match)
          if (found !== undefined) {
            waiters.delete(check)
            resolve(found)
          }
        }
        waiters.add(check)
        check()
        void closed.then((code) => {
          if (waiters.delete(check)) reject(new Error(`harness ${args.join(' ')} exited ${code} first: ${stdout}${stderr}`))
        })
      })
    },
    closed,
  }
}

/** The ops fixture the CLI suites run (its harness module, as the bin loads it). */
const OPS_MODULE = 'test/fixtures/ops.ts'

/**
 * A `harness worker` bin on the ops fixture, the env its commands run with (REDIS_URL, a fresh
 * DH_PREFIX, HARNESS_MODULE, LOG_JSON) and a host on the same prefix; `stop` ends the worker, closes
 * the host and removes the prefix's keys.
 */
export async function startOpsCli(tag: string): Promise<{ env: Record<string, string>; host: HarnessHost; stop(): Promise<void> }> {
  const env = { REDIS_URL: await getRedisUrl(), DH_PREFIX: uniquePrefix(tag), HARNESS_MODULE: OPS_MODULE, LOG_JSON: '1' }
  const host = createHarnessHost({ redis: env.REDIS_URL, prefix: env.DH_PREFIX, harnesses: [ops], logger: quiet })
  const worker = spawnBin(['worker', OPS_MODULE, '--concurrency', '4'], env)
  const stop = async () => {
    worker.proc.kill('SIGTERM')
    await worker.closed
    await host.close()
    await cleanupPrefix(env.REDIS_URL, env.DH_PREFIX)
  }
  await worker
    .waitForLine((l) => l.includes('worker started'))
    .catch(async (error: unknown) => {
      await stop()
      throw error
    })
  return { env, host, stop }
}
