// Spawns real worker processes (workers/worker.ts under tsx): for integration tests, the demo and chaos runs.
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
/** How long a new worker process may take to log that it started. */
const STARTUP_MS = 120_000

/** A worker process `spawnWorker` started. */
export interface WorkerProcess {
  proc: ChildProcess
  /** Every JSON log line so far. */
  lines: Array<Record<string, unknown>>
  /** Everything written to stderr so far. */
  readonly stderr: string
  /** Resolves with the first log line (past or future) that matches. */
  waitFor(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>
  kill(signal?: NodeJS.Signals): Promise<void>
}

/** Options of `spawnWorker`. */
export interface SpawnWorkerOptions {
  redisUrl: string
  prefix: string
  /** Harness module path, relative to the package root. */
  module: string
  concurrency?: number
  env?: Record<string, string>
  /** Entry point; default workers/worker.ts. */
  entry?: string
}

/** Starts a worker process on a harness module (this repository's `workers/worker.ts` under tsx), with JSON log lines to wait on. */
export async function spawnWorker(options: SpawnWorkerOptions): Promise<WorkerProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', options.entry ?? 'workers/worker.ts', options.module], {
    cwd: root,
    env: {
      ...process.env,
      REDIS_URL: options.redisUrl,
      DH_PREFIX: options.prefix,
      CONCURRENCY: String(options.concurrency ?? 10),
      LOG_JSON: '1',
      LOG_LEVEL: 'debug',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: Array<Record<string, unknown>> = []
  const listeners = new Set<() => void>()
  let buffer = ''
  let stderr = ''
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString()
    let nl: number
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      try {
        lines.push(JSON.parse(line))
      } catch {
        lines.push({ raw: line })
      }
      for (const l of listeners) l()
    }
  })
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  const waitFor: WorkerProcess['waitFor'] = (match, timeoutMs = 30_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = lines.find(match)
        if (found) {
          listeners.delete(check)
          clearTimeout(timer)
          resolve(found)
        }
      }
      const timer = setTimeout(() => {
        listeners.delete(check)
        reject(new Error(`worker ${proc.pid}: no matching log line within ${timeoutMs} ms. stderr: ${stderr.slice(-2000)}`))
      }, timeoutMs)
      listeners.add(check)
      check()
    })
  const worker: WorkerProcess = {
    proc,
    lines,
    get stderr() {
      return stderr
    },
    waitFor,
    async kill(signal = 'SIGKILL') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
      await exited
    },
  }
  // a start under tsx compiles the library first, which on a loaded 2-core machine has taken over
  // 30 s: this waits for the process to come up, it bounds no figure
  await waitFor((l) => typeof l.msg === 'string' && l.msg.endsWith(' started'), STARTUP_MS).catch(async (error: unknown) => {
    await worker.kill()
    throw error
  })
  return worker
}
