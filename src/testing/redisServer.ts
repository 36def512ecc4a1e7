// A private, throw-away redis-server for tests that must own the process
// (kill it, restart it, reload its AOF). Node built-ins only, so it can ship
// in the package's `./testing` entry without pulling test dependencies.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import net from 'node:net'
import path from 'node:path'
import { freePort, isRedisReachable, serverPid } from './redisProbe.js'

/** Options of `startRedisServer`. */
export interface RedisServerOptions {
  port?: number
  appendonly?: boolean
  dir?: string
  hz?: number
  /** Sets `requirepass`; `url` then carries it (`redis://:<password>@…`). */
  password?: string
  /** More redis-server arguments (e.g. `--cluster-enabled yes`). */
  args?: string[]
}

/** A running private `redis-server`: its URL and port, and controls to stop, kill and restart it. */
export interface RedisServerHandle {
  url: string
  port: number
  dir: string
  /** Graceful stop (SIGTERM), then removes the dir if this module created it. */
  stop(): Promise<void>
  /** SIGKILL, like a crash: the dir (and its AOF) is kept for restart(). */
  kill(): Promise<void>
  /** Starts again on the same port and dir, so the AOF is reloaded. */
  restart(): Promise<void>
}

const REDIS_SERVER = 'redis-server'
const READY_TIMEOUT_MS = 5_000
const STOP_TIMEOUT_MS = 5_000
const OUTPUT_FILE = 'redis-server.out'
const START_ATTEMPTS = 3

interface ServerState {
  dir: string
  ownsDir: boolean
  child: ChildProcess | undefined
  running: boolean
  spawnError: Error | undefined
  exited: Promise<void>
  watchdog: ChildProcess
}

const liveServers = new Set<ServerState>()
let exitHookInstalled = false

// 'exit' only runs on a normal exit; vitest stops its fork workers with
// SIGTERM, which skips it. So each server also gets a detached watchdog that
// reads the current redis pid on stdin and, on EOF (the parent died, however),
// SIGKILLs that pid and removes a dir we created.
const WATCHDOG_SCRIPT = [
  'pid=""',
  'while read -r line; do pid=$line; done',
  'if [ -n "$pid" ]; then',
  '  kill -9 "$pid" 2>/dev/null',
  '  for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done',
  'fi',
  'if [ -n "$1" ]; then rm -rf "$1"; fi',
].join('\n')

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const state of liveServers) {
      if (state.running) state.child?.kill('SIGKILL')
      if (state.ownsDir) {
        try {
          rmSync(state.dir, { recursive: true, force: true, maxRetries: 3 })
        } catch {
          // the watchdog retries the removal once the child is gone
        }
      }
    }
  })
}

export { isRedisReachable }

/** Whether a `redis-server` binary is on PATH. */
export function hasRedisServerBinary(): boolean {
  const probe = spawnSync(REDIS_SERVER, ['--version'], { stdio: 'ignore' })
  return probe.error === undefined && probe.status === 0
}

function outputTail(dir: string, lines = 20): string {
  let output = ''
  try {
    output = readFileSync(path.join(dir, OUTPUT_FILE), 'utf8').trimEnd()
  } catch {
    // reported below as no output
  }
  return output ? output.split('\n').slice(-lines).join('\n') : '(no output)'
}

function startWatchdog(dir: string, ownsDir: boolean): ChildProcess {
  const watchdog = spawn('sh', ['-c', WATCHDOG_SCRIPT, 'redis-watchdog', ownsDir ? dir : ''], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  })
  watchdog.unref()
  // The pipe is a net.Socket at runtime; unref it so it does not keep the parent alive.
  if (watchdog.stdin instanceof net.Socket) watchdog.stdin.unref()
  watchdog.stdin?.on('error', () => undefined)
  return watchdog
}

function spawnServer(state: ServerState, args: string[]): void {
  // Output goes to a file, not a pipe: a pipe would hold the parent's event loop open.
  const out = openSync(path.join(state.dir, OUTPUT_FILE), 'a')
  let child: ChildProcess
  try {
    child = spawn(REDIS_SERVER, args, { stdio: ['ignore', out, out] })
  } finally {
    closeSync(out)
  }
  child.unref()
  state.child = child
  state.running = true
  state.spawnError = undefined
  state.exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      state.running = false
      // An empty line tells the watchdog there is no live pid to kill any more.
      state.watchdog.stdin?.write('\n')
      resolve()
    })
    // e.g. ENOENT: 'exit' never fires for a process that did not start.
    child.once('error', (err) => {
      state.running = false
      state.spawnError = err
      resolve()
    })
  })
  if (child.pid !== undefined) state.watchdog.stdin?.write(`${child.pid}\n`)
}

async function waitReady(state: ServerState, url: string, port: number): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (!state.running) {
      const reason = state.spawnError ? `failed to spawn (${state.spawnError.message})` : 'exited during startup'
      throw new Error(`${REDIS_SERVER} on port ${port} ${reason}. Last output:\n${outputTail(state.dir)}`)
    }
    if ((await isRedisReachable(url, 500)) && (await serverPid(url, 500)) === state.child?.pid) return
    await new Promise((r) => setTimeout(r, 50))
  }
  await terminate(state, 'SIGKILL')
  throw new Error(
    `${REDIS_SERVER} on port ${port} did not answer PING within ${READY_TIMEOUT_MS} ms. Last output:\n${outputTail(state.dir)}`,
  )
}

async function terminate(state: ServerState, signal: NodeJS.Signals): Promise<void> {
  const child = state.child
  if (!state.running || child === undefined) return
  child.kill(signal)
  // The ref'd timer also keeps the loop alive while we wait on the unref'd child.
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), STOP_TIMEOUT_MS)
  })
  const forced = await Promise.race([state.exited.then(() => false), timedOut])
  clearTimeout(timer)
  if (forced) {
    child.kill('SIGKILL')
    await state.exited
  }
}

/** Starts a private `redis-server` on a free port (killed when this process exits), for tests and demos. */
export async function startRedisServer(opts: RedisServerOptions = {}): Promise<RedisServerHandle> {
  const appendonly = opts.appendonly ?? false
  const hz = opts.hz ?? 100
  const ownsDir = opts.dir === undefined
  const dir = opts.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'redis-test-')))
  if (!ownsDir) mkdirSync(dir, { recursive: true })

  const state: ServerState = {
    dir,
    ownsDir,
    child: undefined,
    running: false,
    spawnError: undefined,
    exited: Promise.resolve(),
    watchdog: startWatchdog(dir, ownsDir),
  }
  liveServers.add(state)
  installExitHook()

  const argsFor = (port: number): string[] => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    appendonly ? 'yes' : 'no',
    ...(appendonly ? ['--appendfsync', 'always'] : []),
    '--dir',
    dir,
    '--hz',
    String(hz),
    '--daemonize',
    'no',
    ...(opts.password === undefined ? [] : ['--requirepass', opts.password]),
    ...(opts.args ?? []),
  ]

  let stopped = false
  const stop = async (): Promise<void> => {
    if (stopped) return
    stopped = true
    liveServers.delete(state)
    state.watchdog.kill('SIGKILL')
    await terminate(state, 'SIGTERM')
    if (ownsDir) await rm(dir, { recursive: true, force: true, maxRetries: 3 })
  }

  const urlFor = (port: number): string =>
    opts.password === undefined ? `redis://127.0.0.1:${port}` : `redis://:${encodeURIComponent(opts.password)}@127.0.0.1:${port}`

  // The free-port probe can race with another process, so an unpinned port is retried.
  let port = 0
  for (let attempt = 1; ; attempt++) {
    port = opts.port ?? (await freePort())
    spawnServer(state, argsFor(port))
    try {
      await waitReady(state, urlFor(port), port)
      break
    } catch (err) {
      const portTaken = /address already in use/i.test(String(err))
      if (opts.port === undefined && portTaken && attempt < START_ATTEMPTS) continue
      await stop()
      throw err
    }
  }

  const url = urlFor(port)
  return {
    url,
    port,
    dir,
    stop,
    kill: () => terminate(state, 'SIGKILL'),
    async restart() {
      if (stopped) throw new Error(`redis-server on port ${port} was stopped; start a new one instead`)
      await terminate(state, 'SIGTERM')
      spawnServer(state, argsFor(port))
      await waitReady(state, url, port)
    },
  }
}
