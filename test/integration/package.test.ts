// The package as a team installs it: `npm pack` (prepack builds dist/), `npm install <tarball>` into a
// new folder, and there plain node, the `harness` bin on a plain-JavaScript harness module and tsc.
// One pack and one install for the whole file; the pack builds dist/ unless it is fresh (test/helpers/freshBuild.ts).
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distIsFresh } from '../helpers/freshBuild.js'
import { getRedisUrl, rigClient, uniquePrefix } from '../rig.js'
import { scanPrefix } from '../helpers/scanRedis.js'
import { randomBytes } from 'node:crypto'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))
const bin = (name: string) => join(root, 'node_modules', '.bin', name)

let dir: string
let tarball: string
let packed: string[]
const children: ChildProcess[] = []

// a plain-JavaScript harness module against the installed package: one durable tool, a scripted model
const HARNESS_MJS = `
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { defineHarness, durableTool } from 'durable-harness'
import { scriptedModel } from 'durable-harness/testing'

export const add = durableTool(
  toolDefinition({ name: 'add', description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }) }),
  async ({ a, b }, { step }) => step.do('sum', () => ({ sum: a + b, pid: process.pid })),
)

export default defineHarness({
  name: 'pkg/adder',
  adapter: scriptedModel([
    { toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] },
    ({ messages }) => ({ text: 'tool said ' + messages.filter((m) => m.role === 'tool').map((m) => m.content).join(' ') }),
  ]),
  tools: [add],
})
`

// another process: a host without workers that prompts a session and calls the tool by runTool, with
// the codec the worker gets from DH_CODEC_KEYS (docs/encryption.md): the log it writes is sealed
const CLIENT_MJS = `
import { aesGcmCodec, createHarnessHost, isDurableHarnessError } from 'durable-harness'
import adder from './harness.mjs'

const codec = aesGcmCodec({ keys: { k1: process.env.DH_CODEC_KEYS.slice(3) }, current: 'k1' })
const host = createHarnessHost({ redis: process.env.REDIS_URL, prefix: process.env.DH_PREFIX, harnesses: [adder], codec })
await host.ready()
const session = host.open(adder, { sessionId: 'pkg-1' })
const { inputId } = await session.prompt('add 2 and 3')
const settled = await session.settled(inputId)
const direct = await session.runTool({ name: 'add', input: { a: 40, b: 2 } })
let refused
try { await session.runTool({ name: 'nope', input: {} }) } catch (error) { refused = isDurableHarnessError(error) ? error.code : 'not ours' }
await host.close()
process.stdout.write(JSON.stringify({ settled, direct, refused, pid: process.pid }))
`

// a TypeScript consumer of every subpath, type-checked with moduleResolution NodeNext
const CONSUMER_TS = `
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import {
  createHarnessHost, defineHarness, durableTool, isDurableHarnessError,
  type DurableHarnessErrorCode, type HarnessHost, type Session, type Settled,
} from 'durable-harness'
import { createHarnessHandler } from 'durable-harness/http'
import { createDashboard } from 'durable-harness/dashboard'
import { scriptedModel } from 'durable-harness/testing'
import { BudgetExceededError, principalId, type TurnsPage, type LogEntry } from 'durable-harness/ops'
import type { ModelErrorPolicy, ModelErrorDecision, Budgets, BudgetLeft } from 'durable-harness/hooks'
import { createMcpServer, mcpTools, IDEMPOTENCY_KEY_META, type McpServerOptions } from 'durable-harness/mcp'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'

const add = durableTool(
  toolDefinition({ name: 'add', description: 'Add', inputSchema: z.object({ a: z.number(), b: z.number() }) }),
  async ({ a, b }, { step, budget }) => {
    const left: BudgetLeft[] = await budget()
    return step.do('sum', () => ({ sum: a + b, budgets: left.length }))
  },
)
const budgets: Budgets = { session: { maxModelCalls: 50 }, principal: { maxCost: 5, per: '1d', onExceeded: 'fail' } }
const harness = defineHarness({ name: 'ts/adder', adapter: scriptedModel([]), tools: [add], budgets })
export const overBudget = (error: unknown): boolean => error instanceof BudgetExceededError && error.scope === 'principal'
const host: HarnessHost = createHarnessHost({ redis: 'redis://127.0.0.1:6379', harnesses: [harness] })
const session: Session = host.open(harness, { sessionId: 's1' })
export const settled: Promise<Settled> = session.prompt('x').then(({ inputId }) => session.settled(inputId))
export const handler: (request: Request) => Promise<Response> = createHarnessHandler({ host, harness, authorize: () => ({ id: 'u' }) })
export const dashboard = createDashboard({ host, authorize: () => ({ id: 'ops' }) })
export function codeOf(error: unknown): DurableHarnessErrorCode | undefined {
  return isDurableHarnessError(error) ? error.code : undefined
}
export const failed: Promise<TurnsPage> = host.turns({ status: 'failed' })
export const entries: Promise<LogEntry[]> = session.log.read()
export const who: string | undefined = principalId({ id: 'u' })
const fail: ModelErrorDecision = { action: 'fail' }
const mcpOptions: McpServerOptions = { host, harness, authorize: () => ({ id: 'u' }), canAccess: (_p, sessionId) => sessionId.startsWith('mcp.') }
export const mcpHandler: (request: Request) => Promise<Response> = createMcpServer(mcpOptions)
export const remoteTools = (client: Client) => mcpTools(client, { names: ['add'], replay: 'safe', taskTtl: '1h' })
export const metaKey: string = IDEMPOTENCY_KEY_META
export const policy: ModelErrorPolicy = ({ retries }) => (retries < 3 ? { action: 'retry', delayMs: 1000 } : fail)
// @ts-expect-error not an exported path: internals stay internal
import('durable-harness/dist/log/index.js')
`

// the SDK's client (a dependency of the package) against \`harness mcp\`: a plain call and a task
const MCP_CLIENT_MJS = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js'

const client = new Client({ name: 'consumer', version: '1.0.0' })
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])))
const { tools } = await client.listTools()
const plain = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })
const { task } = await client.request({ method: 'tools/call', params: { name: 'add', arguments: { a: 40, b: 2 }, task: {} } }, CreateTaskResultSchema)
const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
const status = (await client.experimental.tasks.getTask(task.taskId)).status
const only = ({ sum }) => ({ sum })
process.stdout.write(JSON.stringify({ tools: tools.map((t) => t.name), sum: only(plain.structuredContent), task: status, viaTask: only(result.structuredContent) }))
await client.close()
`

/** The README's ```ts blocks: harness.ts, main.ts, and the scriptedModel swap, in that order. */
function readmeBlocks(): { harness: string; main: string; swap: string } {
  const blocks = [...readFileSync(join(root, 'README.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)
  const harness = blocks.find((b) => b.includes('openaiText('))!
  const main = blocks.find((b) => b.includes("from './harness.js'"))!
  const swap = blocks.find((b) => b.includes('const adapter = scriptedModel('))!
  return { harness, main, swap }
}

const devVersion = (name: string) =>
  (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name]

function write(name: string, text: string): void {
  writeFileSync(join(dir, name), text)
}

/** Starts a worker process (or another long-running bin); resolves with its `worker started` log line (or the first line `started` takes). */
function startWorker(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  started: (line: string) => Record<string, unknown> | undefined = (l) =>
    l.includes('"worker started"') ? (JSON.parse(l) as Record<string, unknown>) : undefined,
): Promise<Record<string, unknown>> {
  // a process group of its own: `npx` runs the bin through `sh`, so killing npx alone would leave the
  // worker itself running after the test
  const worker = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  children.push(worker)
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    worker.stderr.on('data', (c: Buffer) => (err += c.toString()))
    worker.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      const found = out
        .split('\n')
        .map(started)
        .find((value) => value !== undefined)
      if (found) resolve(found)
    })
    worker.once('exit', (code) => reject(new Error(`the worker exited (${code}) before it started: ${err}`)))
  })
}

/** A process in the install folder, to its end. */
function node(args: string[], env: Record<string, string> = {}) {
  return run(process.execPath, args, { cwd: dir, env: { ...process.env, ...env } })
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dh-package-'))
  // --json: the tarball's name and file list; prepack runs the build, unless dist/ is the build of
  // src/ as it is (`npm test` built it just before): then --ignore-scripts packs that build
  const fresh = distIsFresh(root) ? ['--ignore-scripts'] : []
  const { stdout } = await run('npm', ['pack', '--json', ...fresh, '--pack-destination', dir], { cwd: root, maxBuffer: 16 << 20 })
  const [info] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>
  tarball = join(dir, info!.filename)
  packed = info!.files.map((f) => f.path)
  write('package.json', JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  // the provider adapter the README's example uses, beside the package: one install
  // beside the package: the provider adapter the README's example uses, and tsx for a TypeScript
  // harness module (the project's own dev dependency); one install
  const beside = ['@tanstack/ai-openai', 'tsx', 'vitest'].map((name) => `${name}@${devVersion(name)}`)
  await run('npm', ['install', tarball, ...beside, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir })
}, 300_000)

afterAll(async () => {
  // each worker's whole group (npx, its sh, the worker), also of a worker whose npx exited already
  const exited = children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined))
  for (const c of children) {
    try {
      process.kill(-c.pid!, 'SIGKILL')
    } catch {
      c.kill('SIGKILL') // the group is gone already
    }
  }
  await Promise.all(exited)
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('the packed tarball', () => {
  it('holds dist/ (JavaScript and .d.ts, the Lua scripts embedded in lua.generated.js, no .lua file), bin/, README, LICENSE and the docs with the decision records, and nothing of tests, scripts or screenshots', () => {
    for (const file of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/http/index.js',
      'dist/dashboard/index.d.ts',
      'dist/testing/index.js',
      'dist/entries/ops.js',
      'dist/entries/ops.d.ts',
      'dist/entries/hooks.d.ts',
      'dist/cli/main.js',
      'dist/log/commands/lua.generated.js',
      'bin/harness.js',
      'README.md',
      'LICENSE',
      'docs/operations.md',
      'docs/decisions.md',
      'docs/decisions/ids-and-keys.md',
    ])
      expect(packed).toContain(file)
    expect(packed.filter((f) => /^(test|src|scripts|workers|examples|bench)\/|\.png$|\.test\.|chaos|BENCHMARKS/.test(f))).toEqual([])
    expect(packed.filter((f) => f.endsWith('.lua'))).toEqual([])
  })

  it('publint finds nothing to fix (strict: warnings fail too)', async () => {
    const { stdout } = await run(bin('publint'), ['run', tarball, '--strict'])
    expect(stdout).toContain('All good!')
  })

  it('arethetypeswrong finds no problem with the types of any subpath (profile esm-only: the package is ESM only)', async () => {
    const { stdout } = await run(bin('attw'), [tarball, '--profile', 'esm-only', '--format', 'json'], { maxBuffer: 16 << 20 })
    const report = JSON.parse(stdout) as { analysis: { problems: unknown[] } }
    expect(report.analysis.problems.filter((p) => !/node10|node16-cjs/.test(JSON.stringify(p)))).toEqual([])
  })
})

describe('installed with npm install <tarball>', () => {
  it('every subpath imports in plain node (no tsx, no TypeScript)', async () => {
    const script = `
      const names = {}
      for (const sub of ['', '/ops', '/hooks', '/http', '/dashboard', '/testing', '/mcp']) names[sub || '.'] = Object.keys(await import('durable-harness' + sub))
      process.stdout.write(JSON.stringify(names))`
    const { stdout } = await node(['--input-type=module', '-e', script])
    const names = JSON.parse(stdout) as Record<string, string[]>
    expect(names['.']).toEqual(expect.arrayContaining(['durableTool', 'defineHarness', 'createHarnessHost', 'isDurableHarnessError']))
    expect(names['/http']).toContain('createHarnessHandler')
    expect(names['/dashboard']).toContain('createDashboard')
    expect(names['/testing']).toContain('scriptedModel')
    expect(names['/mcp']).toEqual(['IDEMPOTENCY_KEY_META', 'McpToolError', 'createMcpServer', 'mcpTools'])
    expect(names['/ops']).toEqual(['BudgetExceededError', 'CodecDecodeError', 'CodecKeyMissingError', 'CodecMissingError', 'principalId'])
    expect(names['.']).toContain('aesGcmCodec')
    expect(names['/hooks']).toEqual([]) // types only
    // the classes a caller catches, and no internal one
    expect(names['.']).toEqual(expect.arrayContaining(['SessionBusyError', 'ToolCallError', 'NonRetryableError']))
    expect(names['.']).not.toContain('InvalidIdError')
  })

  it('npx harness worker runs a plain-JavaScript harness module in its own process; another process prompts and gets the tool result', async () => {
    write('harness.mjs', HARNESS_MJS)
    write('client.mjs', CLIENT_MJS)
    const key = randomBytes(32).toString('base64')
    const env = { REDIS_URL: await getRedisUrl(), DH_PREFIX: uniquePrefix('package'), LOG_JSON: '1', DH_CODEC_KEYS: `k1:${key}` }
    const { pid: workerPid } = await startWorker('npx', ['--no-install', 'harness', 'worker', './harness.mjs'], dir, env)
    const { stdout } = await node(['client.mjs'], env)
    const result = JSON.parse(stdout) as {
      settled: { outcome: string; text: string }
      direct: { sum: number; pid: number }
      refused: string
      pid: number
    }
    expect(result.settled).toMatchObject({ outcome: 'completed', text: expect.stringContaining('"sum":5') })
    expect(result.direct.sum).toBe(42)
    // the tool ran in the worker the bin started, not in the prompting process
    expect(result.direct.pid).toBe(workerPid)
    expect(result.direct.pid).not.toBe(result.pid)
    expect(result.refused).toBe('unknown_tool')
    // sealed at rest: the prompt's text is in no stored entry in plain text (R26)
    const redis = rigClient(env.REDIS_URL)
    const stored = [...(await scanPrefix(redis, env.DH_PREFIX)).values()].join('\n')
    redis.disconnect()
    expect(stored).toContain('\\u0000e')
    expect(stored).not.toContain('add 2 and 3')
  })

  it('npx harness mcp serves the module over MCP: the SDK client (installed with the package) lists the tool, calls it, and runs it as a task', async () => {
    write('harness.mjs', HARNESS_MJS)
    write('mcpClient.mjs', MCP_CLIENT_MJS)
    const env = { REDIS_URL: await getRedisUrl(), DH_PREFIX: uniquePrefix('package-mcp') }
    const { url } = await startWorker('npx', ['--no-install', 'harness', 'mcp', './harness.mjs', '--port', '0'], dir, env, (l) =>
      l.startsWith('MCP server: ') ? { url: l.slice('MCP server: '.length).trim() } : undefined,
    )
    const { stdout } = await node(['mcpClient.mjs', String(url)], env)
    expect(JSON.parse(stdout)).toEqual({ tools: ['add'], sum: { sum: 5 }, task: 'completed', viaTask: { sum: 42 } })
  })

  it("docs/testing.md's examples run as written with vitest in the project: createTestHost on its own redis-server, a clock that skips days, env.crash", async () => {
    const kit = join(dir, 'kit')
    mkdirSync(kit, { recursive: true })
    const docs = readFileSync(join(root, 'docs', 'testing.md'), 'utf8')
    const files = [...docs.matchAll(/<!-- test(?:-module)?: ([\w.]+) -->\n```ts\n([\s\S]*?)```/g)]
    expect(files.map((m) => m[1])).toEqual([
      'billing.ts',
      'renew.test.ts',
      'retries.test.ts',
      'realClock.test.ts',
      'timeout.test.ts',
      'schedules.test.ts',
      'crash.test.ts',
    ])
    for (const [, name, text] of files) writeFileSync(join(kit, name!), text!)
    // no REDIS_URL: each test host starts a redis-server of its own, as a new project's first test does
    const env: Record<string, string | undefined> = {
      ...process.env,
      REDIS_URL: undefined,
      DH_PREFIX: undefined,
      NO_COLOR: '1',
      FORCE_COLOR: '0',
    }
    const vitest = join(dir, 'node_modules', 'vitest', 'vitest.mjs')
    const { stdout } = await run(process.execPath, [vitest, 'run', '--root', kit], { cwd: kit, env, maxBuffer: 16 << 20 }).catch(
      (error: { stdout: string; stderr: string }) => ({ stdout: `${error.stdout}\n${error.stderr}` }),
    )
    expect(stdout).toMatch(/Tests\s+6 passed \(6\)/)
  })

  it('a package export names the harness module: resolved from the working directory (the project), not from where the CLI lives', async () => {
    // a harness package in the project's node_modules; the CLI runs from this repository's source, so
    // only a lookup from the working directory finds the package (and its harness is another copy's)
    mkdirSync(join(dir, 'node_modules', 'acme-harness'), { recursive: true })
    write('node_modules/acme-harness/package.json', JSON.stringify({ name: 'acme-harness', type: 'module', exports: './index.js' }))
    write('node_modules/acme-harness/index.js', HARNESS_MJS)
    const env = { REDIS_URL: await getRedisUrl(), DH_PREFIX: uniquePrefix('package-export'), LOG_JSON: '1' }
    const tsx = join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')
    const started = await startWorker(
      process.execPath,
      ['--import', tsx, join(root, 'src', 'cli', 'main.ts'), 'worker', 'acme-harness'],
      dir,
      env,
    )
    expect(started.harnesses).toEqual(['pkg/adder'])
  })

  it("a TypeScript harness module runs through the tsx of the user's project", async () => {
    write('harness.ts', HARNESS_MJS)
    const env = { REDIS_URL: await getRedisUrl(), DH_PREFIX: uniquePrefix('package-ts'), LOG_JSON: '1' }
    const started = await startWorker('npx', ['--no-install', 'harness', 'worker', './harness.ts'], dir, env)
    expect(started.harnesses).toEqual(['pkg/adder'])
  })

  it('a TypeScript harness module without tsx in the project: one line that says to install tsx or compile, exit 1', async () => {
    // another project, without tsx, that has the installed package (a link to it)
    const bare = mkdtempSync(join(tmpdir(), 'dh-package-no-tsx-'))
    try {
      mkdirSync(join(bare, 'node_modules'))
      symlinkSync(join(dir, 'node_modules', 'durable-harness'), join(bare, 'node_modules', 'durable-harness'))
      writeFileSync(join(bare, 'harness.ts'), HARNESS_MJS)
      const failed = await run(process.execPath, ['node_modules/durable-harness/bin/harness.js', 'worker', './harness.ts'], {
        cwd: bare,
      }).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      )
      expect(failed?.code).toBe(1)
      expect(failed?.stderr.trim().split('\n')).toEqual([expect.stringContaining('npm i -D tsx')])
    } finally {
      rmSync(bare, { recursive: true, force: true })
    }
  })

  it('logs without pino-pretty (not a dependency): a terminal gets JSON lines instead of a transport error', async () => {
    const script = `
      process.stdout.isTTY = true
      const { createLogger } = await import('durable-harness')
      createLogger().info('plain line')`
    const { stdout } = await node(['--input-type=module', '-e', script])
    expect(JSON.parse(stdout)).toMatchObject({ msg: 'plain line' })
  })

  it("the README's example runs as written with scriptedModel in the place of adapter, as the README says", async () => {
    const { harness, main, swap } = readmeBlocks()
    const [swapImport, ...swapAdapter] = swap.trim().split('\n')
    const keyless = `${swapImport}\n${harness.replace(/^const adapter = openaiText\(.*$/m, swapAdapter.join('\n'))}`
    expect(keyless).not.toContain('openaiText(')
    const js = (source: string) =>
      ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText
    mkdirSync(join(dir, 'readme-run'), { recursive: true })
    write('readme-run/harness.js', js(keyless))
    // a session id of this run: the example's own may exist already in a shared REDIS_URL
    write('readme-run/main.js', js(main.replace("sessionId: 'order-42'", `sessionId: '${uniquePrefix('readme')}'`)))
    const { stdout } = await node(['readme-run/main.js'], { REDIS_URL: await getRedisUrl() })
    expect(stdout).toContain("outcome: 'completed'")
    expect(stdout).toContain('ch_42')
  })

  it("a TypeScript consumer of every subpath, and the README's example as written (openaiText), type-check against the .d.ts (moduleResolution NodeNext)", async () => {
    write('consumer.ts', CONSUMER_TS)
    const { harness, main } = readmeBlocks()
    mkdirSync(join(dir, 'readme'), { recursive: true })
    write('readme/harness.ts', harness)
    write('readme/main.ts', main)
    write(
      'tsconfig.json',
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true, // the consumer's code against our .d.ts; attw checks that the .d.ts themselves resolve
          types: ['node'],
          typeRoots: [join(root, 'node_modules', '@types')],
        },
        files: ['consumer.ts', 'readme/harness.ts', 'readme/main.ts'],
        // docs/testing.md's examples, when the test above wrote them: they type-check as written too
        include: ['kit/*.ts'],
      }),
    )
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
    const checked = await node([tsc, '-p', 'tsconfig.json']).then(
      () => 'clean',
      (error: { stdout: string }) => error.stdout,
    )
    expect(checked).toBe('clean')
    expect(readdirSync(dir)).not.toContain('consumer.js')
  })
})
