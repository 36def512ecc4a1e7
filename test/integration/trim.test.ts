// compaction.trimAfter (issue 53 item 7; docs/compaction.md, "Trimming"): the span before an old
// enough compaction's cut is exported through retention.export and leaves Redis with the inputs,
// calls, steps and index entries only it used; the session goes on with the same model view.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ModelMessage } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { toolDefinition } from '@tanstack/ai'
import { z } from 'zod'
import { createHarnessHost, defineHarness, durableTool, evictOldest, type Harness, type HarnessHost } from '../../src/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import { applyTrim, compareIds, planTrim, SessionLog, type TrimPlan } from '../../src/log/index.js'
import { trimmingHarness } from '../fixtures/trimming.js'
import { quiet, useInProcessHosts } from '../helpers/hosts.js'
import { spawnWorker } from '../helpers/workerProcess.js'
import { patient } from '../helpers/patience.js'
import { rigClient, scanKeys, startPrivateRedis, uniquePrefix } from '../rig.js'

async function runTurns(host: HarnessHost, harness: Harness, sessionId: string, texts: string[]) {
  const session = host.open(harness, { sessionId })
  for (const text of texts) {
    const { inputId } = await session.prompt(text)
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
  }
  return session
}

const orders = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `o${from + i}`)

describe('compaction.trimAfter', () => {
  const hosts = useInProcessHosts()

  it('R21: the span before an old compaction is exported then trimmed with its inputs, calls and steps; the next turn sees the same view; no side effect runs again', async () => {
    const seen: ModelMessage[][] = []
    const charged = new Map<string, number>()
    const exported: Array<{ jsonl: string; before?: string }> = []
    const harness = trimmingHarness('trimming', seen, charged)
    const { host, url, prefix } = hosts.start(harness, 'trim', {
      retention: { sessionMs: 30 * 86_400_000, export: (_sid, jsonl, span) => void exported.push({ jsonl, ...span }) },
    })
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const session = await runTurns(host, harness, 't1', orders(0, 30))
    const full = await session.log.read()
    const all = await scanKeys(url, prefix)
    const keyOf = (suffix: string) => all.find((k) => k.endsWith(`:t1:${suffix}`))!
    const keys = { log: keyOf('log'), inputs: keyOf('inputs'), calls: keyOf('calls'), steps: keyOf('steps'), usage: keyOf('usage') }
    const sizes = async () => ({
      log: await redis.xlen(keys.log),
      inputs: (await redis.hkeys(keys.inputs)).filter((field) => !field.startsWith('\0')).length,
      calls: await redis.hlen(keys.calls),
      steps: await redis.hlen(keys.steps),
    })
    const before = await sizes()
    const usageBefore = await redis.hgetall(keys.usage)
    expect(await host.retain()).toEqual([])
    expect(exported).toHaveLength(1)
    const span = exported[0]!
    const lines = span.jsonl
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; record: { type: string } })
    const after = await sizes()
    // the export and what is left are the log: nothing lost, nothing twice
    const left = await session.log.read()
    expect([...lines.map((l) => l.id), ...left.map((e) => e.id)]).toEqual(full.map((e) => e.id))
    expect(left[0]!.id).toBe(span.before)
    expect(after.log).toBe(before.log - lines.length)
    expect(lines.length).toBeGreaterThan(before.log / 2)
    for (const key of ['inputs', 'calls', 'steps'] as const) expect(after[key]).toBeLessThan(before[key] / 2)
    // the trimmed turns' spend leaves the usage hash; the session's totals stay
    const usageAfter = await redis.hgetall(keys.usage)
    const trimmedInputs = new Set(
      lines.flatMap((l) => (l.record.type === 'harness.input' ? [(l.record as { inputId?: string }).inputId] : [])),
    )
    expect(trimmedInputs.size).toBeGreaterThan(0)
    const perTurn = (usage: Record<string, string>) => Object.keys(usage).filter((f) => f.startsWith('i/'))
    expect(perTurn(usageBefore).some((f) => trimmedInputs.has(f.split('/')[2]))).toBe(true)
    expect(perTurn(usageAfter).filter((f) => trimmedInputs.has(f.split('/')[2]))).toEqual([])
    expect(perTurn(usageAfter).length).toBeGreaterThan(0)
    const totals = (usage: Record<string, string>) => Object.fromEntries(Object.entries(usage).filter(([f]) => !f.startsWith('i/')))
    expect(totals(usageAfter)).toEqual(totals(usageBefore))
    // the trimmed turns leave host.turns
    const listed = await host.turns({ harness: 'trimming', limit: 100 })
    expect(listed.items.length).toBe(after.inputs)
    // the session goes on: the next view is the one the compaction left, and no charge runs twice
    await runTurns(host, harness, 't1', orders(30, 44))
    expect(seen.at(-1)![0]).toMatchObject({
      role: 'user',
      content: expect.stringMatching(/earlier turns of this conversation are not shown/),
    })
    expect([...charged.values()].every((n) => n === 1)).toBe(true)
    expect(charged.size).toBe(44)
    // a second pass trims the next span, appended after the first
    await host.retain()
    expect(exported.length).toBeGreaterThanOrEqual(2)
    const second = exported[1]!.jsonl
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id)
    expect(second[0]).toBe(span.before)
  })

  it('R21: a worker process (harness worker) on a module that exports retention trims on its sweep; the export appended and what is left form the log', async () => {
    const file = join(tmpdir(), `trim-worker-${process.pid}-${Date.now()}.jsonl`)
    hosts.defer(() => rmSync(file, { force: true }))
    const prefix = uniquePrefix('trim-worker')
    const worker = await spawnWorker({
      redisUrl: hosts.url(),
      prefix,
      module: 'test/fixtures/trimmingWorker.ts',
      env: { SWEEP_EVERY_MS: '200', DH_TRIM_APPEND_FILE: file },
    })
    hosts.defer(() => worker.kill('SIGKILL'))
    const { harnesses } = await import('../fixtures/trimmingWorker.js')
    const host = createHarnessHost({ redis: hosts.url(), harnesses, prefix, logger: quiet })
    hosts.defer(() => host.close())
    const session = host.open(harnesses[0]!, { sessionId: 'w1' })
    for (const text of orders(0, 20)) {
      const { inputId } = await session.prompt(text)
      expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
    }
    const ids = (text: string) =>
      text
        .trimEnd()
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { id: string }).id)
    // the worker's pass appends the span, then trims: Redis then starts after the last exported entry
    const exported = () => (existsSync(file) ? [...new Set(ids(readFileSync(file, 'utf8')))] : [])
    // passes go on every 200 ms: wait for one after the last compaction that could be trimmed
    const trimmed = async () => {
      const kept = await session.log.read()
      return exported().length > kept.length && compareIds(kept[0]!.id, exported().at(-1)!) > 0
    }
    const deadline = Date.now() + patient(30_000)
    while (!(await trimmed()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    expect(await trimmed()).toBe(true)
    const left = (await session.log.read()).map((e) => e.id)
    const whole = [...exported(), ...left]
    expect(whole).toEqual([...whole].sort(compareIds))
    const { inputId } = await session.prompt('o20')
    expect(await session.settled(inputId, { timeoutMs: patient(30_000) })).toMatchObject({ outcome: 'completed' })
  })

  it("R21: a compaction logged between a pass's plan and its trim keeps the session in the trim index: the next pass trims up to it", async () => {
    const exported: string[] = []
    const harness = trimmingHarness('trimRace')
    const { host, url, prefix } = hosts.start(harness, 'trim-race', {
      retention: { sessionMs: 30 * 86_400_000, export: (_sid, jsonl) => void exported.push(jsonl) },
    })
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const session = await runTurns(host, harness, 'race-1', orders(0, 12))
    const compactions = async () => (await session.log.read({ types: ['harness.compaction'] })).length
    // a pass's plan, read now, when no compaction waits after the one it trims up to ...
    const { stream } = new SessionLog(redis, prefix, 'race-1')
    const plan = await planTrim(stream, Date.now())
    expect('cut' in plan && plan.nextDue).toBe(undefined)
    // ... a turn logs a newer compaction before the pass's write ...
    const seen = await compactions()
    for (let n = 12; (await compactions()) === seen; n++) await runTurns(host, harness, 'race-1', orders(n, n + 1))
    expect(await applyTrim(stream, plan as TrimPlan)).toEqual(['trimmed', expect.any(Number)])
    // ... and the next pass still finds the session due, and trims up to the newer one
    await new Promise((r) => setTimeout(r, 5))
    await host.retain()
    expect(exported).toHaveLength(1)
  })

  it("R21: a trimmed fan-out call's children leave the session's tree hash with it; the kept ones stay", async () => {
    const leaf = durableTool(
      toolDefinition({ name: 'leaf', description: 'A child', inputSchema: z.object({ n: z.number() }) }),
      async ({ n }, { step }) => step.do('double', async () => n * 2),
    )
    const fan = durableTool(
      toolDefinition({ name: 'fan', description: 'Fans out', inputSchema: z.object({ order: z.string() }) }),
      async (_input, { tools }) => {
        const group = tools.group()
        for (const n of [1, 2]) await group.start(leaf, { n }, { name: `l${n}` })
        return (await group.settled()).length
      },
    )
    const harness = defineHarness({
      name: 'trimFan',
      tools: [leaf, fan],
      adapter: scriptedModel(
        Array.from({ length: 200 }, (_, call) => ({ messages }: { messages: ModelMessage[] }) => {
          const last = messages.at(-1)!
          return last.role === 'tool'
            ? { text: `fanned ${call} ${'words '.repeat(30)}` }
            : { toolCalls: [{ name: 'fan', input: { order: String(last.content) } }] }
        }),
      ),
      compaction: { maxTokens: 900, strategy: evictOldest({ keepRecentTokens: 400 }), trimAfter: 1 },
    })
    const { host, url, prefix } = hosts.start(harness, 'trim-fan', { retention: { sessionMs: 30 * 86_400_000, export: () => {} } })
    const redis = rigClient(url)
    hosts.defer(() => redis.disconnect())
    const session = await runTurns(host, harness, 'f1', orders(0, 20))
    const treeKey = (await scanKeys(url, prefix)).find((k) => k.endsWith(':f1:tree'))!
    const before = Object.keys(await redis.hgetall(treeKey))
    expect(before.length).toBeGreaterThanOrEqual(40)
    await host.retain()
    const kept = new Set((await session.log.read()).flatMap((e) => [Reflect.get(e.record, 'toolCallId')]))
    const after = Object.keys(await redis.hgetall(treeKey))
    expect(after.length).toBeLessThan(before.length / 2)
    // every place left is of a call whose entries Redis still holds
    for (const field of after) expect(kept.has(field.split('\0')[0])).toBe(true)
    await runTurns(host, harness, 'f1', orders(20, 22))
  })

  it('R21: Redis SIGKILLed and restarted from its AOF after a trim: the trimmed state holds and the next turn works', async () => {
    const server = await startPrivateRedis()
    hosts.defer(() => server.stop())
    const seen: ModelMessage[][] = []
    const charged = new Map<string, number>()
    const harness = trimmingHarness('trimAof', seen, charged)
    const { host } = hosts.start(harness, 'trim-aof', { redis: server.url, retention: { sessionMs: 30 * 86_400_000, export: () => {} } })
    const session = await runTurns(host, harness, 'a1', orders(0, 16))
    await host.retain()
    const kept = await session.log.read()
    await server.kill()
    await server.restart()
    expect(await session.log.read()).toEqual(kept)
    await runTurns(host, harness, 'a1', orders(16, 18))
    expect([...charged.values()].every((n) => n === 1)).toBe(true)
  })

  it('R21: the process trimming is SIGKILLed after the export and before the trim: nothing is trimmed, and the next pass exports the same span again and trims it', async () => {
    const charged = new Map<string, number>()
    const harness = trimmingHarness('trimKill', [], charged)
    const exported: Array<{ jsonl: string; before?: string }> = []
    const { host, url, prefix } = hosts.start(harness, 'trim-kill', {
      retention: { sessionMs: 30 * 86_400_000, export: (_sid, jsonl, span) => void exported.push({ jsonl, ...span }) },
    })
    const session = await runTurns(host, harness, 'k1', orders(0, 20))
    const full = await session.log.read()
    const file = join(tmpdir(), `trim-kill-${process.pid}-${Date.now()}.json`)
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/trimming.ts'], {
      env: { ...process.env, REDIS_URL: url, DH_PREFIX: prefix, DH_TRIM_EXPORT_FILE: file },
      stdio: 'ignore',
    })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    hosts.defer(() => child.kill('SIGKILL'))
    const deadline = Date.now() + patient(60_000)
    while (!existsSync(file) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    const first = JSON.parse(readFileSync(file, 'utf8')) as { sessionId: string; jsonl: string; before: string }
    child.kill('SIGKILL')
    await exited
    expect(first.sessionId).toBe('k1')
    expect(await session.log.read()).toEqual(full)
    await host.retain()
    expect(exported[0]).toEqual({ jsonl: first.jsonl, before: first.before })
    expect((await session.log.read())[0]!.id).toBe(first.before)
    await runTurns(host, harness, 'k1', orders(20, 24))
    expect([...charged.values()].every((n) => n === 1)).toBe(true)
  })
})
