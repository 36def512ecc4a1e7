// `npm run bench -- --against <git ref> [--rounds 5] [--rows id,id|all] [--quick] [--keep] [--npm-ci] [--driver this|own] [--source] [--interleave]`
// A/B of this tree against any commit, in one run: checks the ref out into a temporary git worktree
// (node_modules reused when the ref's package-lock.json is this checkout's, or when the ref pins the
// same versions of its runtime dependencies as are installed here; else `npm ci` there), starts one
// private redis-server for both, and runs the two sides in alternating rounds (this, ref, then ref,
// this, …), each side a fresh child process (againstSide.ts) that prints its figures as JSON, and the
// control rows (raw BullMQ, the same code on both sides) in one more fresh process right after it.
// Both sides run THIS tree's row driver; only the library source differs (docs/BENCHMARKS.md says why).
// `--driver own`: each side runs its own scripts/bench/againstSide.ts where it has one (this tree's where not).
// Prints each row's medians, this/ref, the spread of the rounds and a verdict (againstReport.ts), with
// the machine's load before and after; writes everything to bench/against.json.
// `--interleave`: the runTool rows only, both libraries in one process in short alternating blocks
// (againstInterleaved.ts); `--rounds` is then the number of block pairs (default 150).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { startRedisServer } from '../../src/testing/index.js'
import { AB_ROWS, aggregate, formatReport, INTERLEAVED_ROWS, type RowResult, type SideRound } from './againstReport.js'
import { compileSide } from './compileSide.js'
import { stderrProgress as progress } from './lib.js'

interface AgainstArgs {
  ref: string
  rounds: number
  rows: string[]
  quick: boolean
  keep: boolean
  npmCi: boolean
  /** 'this': this tree's row driver on both sides; 'own': each side's own againstSide.ts where it has one. */
  driver: 'this' | 'own'
  /** Run each side's TypeScript source under tsx instead of its compiled JavaScript (compileSide.ts). */
  source: boolean
  /** Both sides in one process, in alternating blocks (againstInterleaved.ts); `rounds` counts block pairs. */
  interleave: boolean
}

function parseAgainstArgs(argv: string[]): AgainstArgs {
  const value = (name: string) => {
    const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`))
    if (i < 0) return undefined
    return argv[i]!.includes('=') ? argv[i]!.slice(argv[i]!.indexOf('=') + 1) : argv[i + 1]
  }
  const usage = `npm run bench -- --against <git ref> [--rounds N] [--rows ${AB_ROWS.map((r) => r.id).join(',')}|all] [--quick] [--keep] [--npm-ci] [--driver this|own] [--source] [--interleave]`
  const fail = (why: string): never => {
    process.stderr.write(`bench --against: ${why}\n${usage}\n`)
    process.exit(2)
  }
  const ref = value('against')
  if (!ref || ref.startsWith('--')) fail('--against needs a git ref (a commit, branch or tag)')
  const interleave = argv.includes('--interleave')
  const rounds = Number(value('rounds') ?? (interleave ? 150 : 5))
  const most = interleave ? 2000 : 100
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > most) fail(`--rounds takes a whole number from 1 to ${most}`)
  const offered: readonly string[] = interleave ? INTERLEAVED_ROWS : AB_ROWS.map((r) => r.id)
  const list = value('rows') ?? 'all'
  const rows = list === 'all' ? [...offered] : list.split(',').filter(Boolean)
  const unknown = rows.filter((id) => !offered.includes(id))
  if (unknown.length || rows.length === 0) fail(`--rows takes "all" or ids of ${offered.join(', ')}${interleave ? ' (--interleave)' : ''}`)
  const driver = value('driver') ?? 'this'
  if (driver !== 'this' && driver !== 'own') fail('--driver takes "this" (default: this tree\'s row driver on both sides) or "own"')
  if (interleave && driver === 'own') fail("--interleave runs this tree's driver for both libraries in one process: leave out --driver own")
  if (interleave && argv.includes('--quick')) fail('--interleave has no --quick: give fewer block pairs (--rounds)')
  return {
    ref: ref!,
    rounds,
    rows,
    quick: argv.includes('--quick'),
    keep: argv.includes('--keep'),
    npmCi: argv.includes('--npm-ci'),
    driver: driver as 'this' | 'own',
    source: argv.includes('--source'),
    interleave,
  }
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()

/** Whole-machine CPU idle, as a fraction, between two os.cpus() snapshots. */
function idleBetween(a: os.CpuInfo[], b: os.CpuInfo[]): number {
  let idle = 0
  let total = 0
  b.forEach((cpu, i) => {
    const before = a[i]!.times
    const after = cpu.times
    idle += after.idle - before.idle
    total += Object.keys(after).reduce((s, k) => s + after[k as keyof typeof after] - before[k as keyof typeof before], 0)
  })
  return total > 0 ? idle / total : 0
}

async function machineLoad() {
  const cpus = os.cpus()
  await new Promise((r) => setTimeout(r, 1000))
  return { loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100), idle1s: Math.round(idleBetween(cpus, os.cpus()) * 100) / 100 }
}

/** node_modules for the ref's worktree: why it may reuse this checkout's, or null when it needs `npm ci`. */
function reuseReason(root: string, sha: string): string | null {
  const ours = readFileSync(join(root, 'package-lock.json'), 'utf8')
  let theirs: string
  try {
    theirs = git(root, 'show', `${sha}:package-lock.json`)
  } catch {
    return null
  }
  if (theirs.trim() === ours.trim()) return 'package-lock.json identical'
  const deps = (JSON.parse(git(root, 'show', `${sha}:package.json`)) as { dependencies?: Record<string, string> }).dependencies ?? {}
  const differing = Object.entries(deps).filter(([name, version]) => {
    const installed = join(root, 'node_modules', name, 'package.json')
    return !existsSync(installed) || (JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version !== version
  })
  return differing.length === 0 ? `its ${Object.keys(deps).length} runtime dependencies pinned at the versions installed here` : null
}

export async function againstMain(root: string, argv: string[]): Promise<void> {
  const args = parseAgainstArgs(argv)
  let sha: string
  try {
    sha = git(root, 'rev-parse', '--verify', `${args.ref}^{commit}`)
  } catch {
    process.stderr.write(`bench --against: "${args.ref}" is not a commit here (git rev-parse --verify failed); fetch it or give a sha\n`)
    process.exit(2)
  }
  const head = git(root, 'rev-parse', '--short', 'HEAD')
  const dirty = git(root, 'status', '--porcelain', '--', 'src', 'scripts', 'package.json') !== ''
  const thisLabel = `this tree (HEAD ${head}${dirty ? ' + uncommitted changes' : ''})`
  const refLabel = `${args.ref} (${sha.slice(0, 7)})`

  const dir = mkdtempSync(join(os.tmpdir(), 'bench-against-'))
  let redis: Awaited<ReturnType<typeof startRedisServer>> | undefined
  let child: ChildProcess | undefined
  let cleaned = false
  const cleanup = async () => {
    if (cleaned) return
    cleaned = true
    if (child) killGroup(child)
    await redis?.stop().catch(() => {})
    if (args.keep) return progress(`[against] kept the worktree at ${dir} (git worktree remove --force ${dir})`)
    try {
      git(root, 'worktree', 'remove', '--force', dir)
    } catch {
      rmSync(dir, { recursive: true, force: true })
      git(root, 'worktree', 'prune')
    }
  }
  const onSignal = (signal: NodeJS.Signals) => {
    progress(`[against] ${signal}: removing the worktree and stopping Redis`)
    void cleanup().finally(() => process.exit(130))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    progress(`[against] checking out ${refLabel} into ${dir}`)
    git(root, 'worktree', 'add', '--detach', dir, sha)
    const reuse = args.npmCi ? null : reuseReason(root, sha)
    if (reuse) {
      symlinkSync(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'), 'dir')
      progress(`[against] reusing this checkout's node_modules: ${reuse}`)
    } else {
      progress(`[against] npm ci in the ref's worktree (its package-lock.json differs)`)
      execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] })
    }
    // each side's library as users run it: compiled by tsc (docs/BENCHMARKS.md, compileSide.ts)
    const libs = { this: root, ref: dir }
    if (!args.source) {
      const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
      progress(`[against] compiling both sides with tsc (--source: run their TypeScript under tsx)`)
      libs.this = compileSide(root, join(dir, '.bench-this'), tsc)
      libs.ref = compileSide(dir, join(dir, '.bench-ref'), tsc)
    }
    const before = await machineLoad()
    const cpus0 = os.cpus()
    progress(`[against] load average ${before.loadavg.join(' ')}, CPU idle ${Math.round(before.idle1s * 100)}% on ${cpus0.length} CPUs`)
    redis = await startRedisServer({ appendonly: false, hz: 100 })
    const flush = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    const drivers = { this: root, ref: args.driver === 'own' && existsSync(join(dir, DRIVER)) ? dir : root }
    if (args.driver === 'own' && drivers.ref === root) progress(`[against] ${refLabel} has no ${DRIVER}: both sides run this tree's`)
    // a ref's own driver from before --js runs its source
    const takesJs = (driverRoot: string) => readFileSync(join(driverRoot, DRIVER), 'utf8').includes("'--js'")
    const compiled = { this: !args.source && takesJs(drivers.this), ref: !args.source && takesJs(drivers.ref) }
    const rounds: SideRound[] = []
    const started = Date.now()
    try {
      if (args.interleave) {
        await flush.flushall()
        progress(`[against] ${args.rounds} interleaved block pairs in one process (this tree's library and the ref's)`)
        rounds.push(...(await runInterleaved(root, libs, redis.url, args, (c) => (child = c))))
      } else {
        for (let r = 0; r < args.rounds; r++) {
          const order = r % 2 === 0 ? (['this', 'ref'] as const) : (['ref', 'this'] as const)
          for (const side of order) {
            await flush.flushall() // each side starts on an empty Redis
            progress(`[against] round ${r + 1}/${args.rounds}: ${side === 'this' ? thisLabel : refLabel}`)
            const js = compiled[side]
            const lib = js ? libs[side] : side === 'this' ? root : dir
            const sideArgs = { ...args, source: !js }
            // the control rows in a process of their own, right after: run behind a library in the same
            // process they measured what that library left in V8's shared state (e98a13e's 1.24x, 5/5 rounds)
            const library = args.rows.filter((id) => !CONTROL_ROWS.includes(id))
            const control = args.rows.filter((id) => CONTROL_ROWS.includes(id))
            const track = (c: ChildProcess) => (child = c)
            const rows = library.length ? await runSide(drivers[side], lib, redis.url, { ...sideArgs, rows: library }, track) : {}
            if (control.length) Object.assign(rows, await runSide(drivers[side], lib, redis.url, { ...sideArgs, rows: control }, track))
            rounds.push({ round: r, side, rows })
          }
        }
      }
    } finally {
      flush.disconnect()
    }
    const after = await machineLoad()
    const runIdle = Math.round(idleBetween(cpus0, os.cpus()) * 100) / 100
    const specs = AB_ROWS.filter((s) => args.rows.includes(s.id))
    const reports = aggregate(rounds, specs)
    mkdirSync(join(root, 'bench'), { recursive: true })
    const output = {
      date: new Date(started).toISOString(),
      this: thisLabel,
      ref: refLabel,
      sha,
      args,
      drivers,
      before,
      after,
      runIdle,
      rounds,
      reports,
    }
    writeFileSync(join(root, 'bench', 'against.json'), `${JSON.stringify(output, null, 2)}\n`)
    const load = (l: typeof before) => `load average ${l.loadavg.join(' ')}, CPU idle ${Math.round(l.idle1s * 100)}%`
    const slower = reports.filter((r) => r.verdict === 'SLOWER').map((r) => r.id)
    process.stdout.write(
      `${thisLabel} against ${refLabel}: ${args.rounds} ${args.interleave ? 'interleaved block pairs in one process' : 'alternating rounds'}${args.quick ? ' (--quick)' : ''}, ` +
        `one private redis-server, ${((Date.now() - started) / 1000).toFixed(0)} s; ` +
        `row driver: ${drivers.ref === root ? "this tree's on both sides" : 'each side its own'}\n\n` +
        `${formatReport(reports)}\n\n` +
        `machine: ${os.cpus().length} CPUs; before: ${load(before)}; after: ${load(after)}; CPU idle over the rounds ${Math.round(runIdle * 100)}%\n` +
        (slower.length ? `SLOWER than ${refLabel}: ${slower.join(', ')} — run again before deciding (docs/BENCHMARKS.md)\n` : '') +
        `raw figures: bench/against.json\n`,
    )
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    await cleanup()
  }
}

const DRIVER = join('scripts', 'bench', 'againstSide.ts')

/** The rows of the same code on both sides (raw BullMQ): the run's noise, measured in a process of their own. */
const CONTROL_ROWS = ['raw-20', 'cpu-raw-20']

/** How long one row may take in a side's process before the process is killed and its rows fail (a hanging row). */
const SIDE_ROW_LIMIT_MS = 10 * 60_000

/** SIGKILLs a side's process and the worker processes its rows started (it leads its own process group). */
function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL')
  } catch {
    child.kill('SIGKILL')
  }
}

/** SIGKILLs `child`'s group after `ms` (a hang), saying so through `say`; the caller clears the timer on close. */
function killAfter(child: ChildProcess, ms: number, say: (why: string) => void): NodeJS.Timeout {
  return setTimeout(() => {
    say(`killed after ${Math.round(ms / 1000)} s without finishing (a row hung)`)
    killGroup(child)
  }, ms)
}

/** One side's round: a fresh child process running the driver of the tree at `root` against `lib`'s source. */
function runSide(
  root: string,
  lib: string,
  redisUrl: string,
  args: AgainstArgs,
  track: (c: ChildProcess) => void,
): Promise<Record<string, RowResult>> {
  const driver = join(root, DRIVER)
  const argv = [
    '--import',
    'tsx',
    driver,
    '--lib',
    lib,
    '--redis',
    redisUrl,
    '--rows',
    args.rows.join(','),
    ...(args.quick ? ['--quick'] : []),
    ...(args.source ? [] : ['--js']),
  ]
  return new Promise((resolve) => {
    const c = spawn(process.execPath, argv, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    track(c)
    let out = ''
    const err: string[] = []
    c.stdout!.on('data', (d: Buffer) => (out += d))
    c.stderr!.on('data', (d: Buffer) => err.push(...d.toString().split('\n').filter(Boolean)))
    const guard = killAfter(c, args.rows.length * SIDE_ROW_LIMIT_MS, (why) => err.push(why))
    c.on('close', (code) => {
      clearTimeout(guard)
      const line = out.split('\n').find((l) => l.startsWith('AB-RESULT '))
      if (line) return resolve((JSON.parse(line.slice('AB-RESULT '.length)) as { rows: Record<string, RowResult> }).rows)
      const why = `its process exited ${code} without figures: ${err.slice(-3).join(' | ').slice(0, 300)}`
      resolve(Object.fromEntries(args.rows.map((id) => [id, { error: why }])))
    })
  })
}

/** `--interleave`: both libraries in one child process (againstInterleaved.ts); each block pair is a round. */
function runInterleaved(
  root: string,
  libs: { this: string; ref: string },
  redisUrl: string,
  args: AgainstArgs,
  track: (c: ChildProcess) => void,
): Promise<SideRound[]> {
  const argv = ['--import', 'tsx', join(root, 'scripts', 'bench', 'againstInterleaved.ts')]
  argv.push('--this', libs.this, '--ref', libs.ref, '--redis', redisUrl, '--blocks', String(args.rounds), '--rows', args.rows.join(','))
  if (!args.source) argv.push('--js')
  return new Promise((resolve) => {
    const c = spawn(process.execPath, argv, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], detached: true })
    track(c)
    let out = ''
    c.stdout!.on('data', (d: Buffer) => (out += d))
    let killed = ''
    const guard = killAfter(
      c,
      (args.rounds * args.rows.length * SIDE_ROW_LIMIT_MS) / 10 + SIDE_ROW_LIMIT_MS,
      (why) => (killed = `${why}; `),
    )
    c.on('close', (code) => {
      clearTimeout(guard)
      const line = out.split('\n').find((l) => l.startsWith('AB-RESULT '))
      if (line) return resolve((JSON.parse(line.slice('AB-RESULT '.length)) as { rounds: SideRound[] }).rounds)
      const error = `${killed}the interleaved process exited ${code} without figures (its errors are above)`
      resolve(
        (['this', 'ref'] as const).map((side) => ({ round: 0, side, rows: Object.fromEntries(args.rows.map((id) => [id, { error }])) })),
      )
    })
  })
}
