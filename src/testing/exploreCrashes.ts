import { randomUUID } from 'node:crypto'
import type { AnyServerTool } from '@tanstack/ai'
import { CallAborts, keptResult, runCall } from '../call/index.js'
import { StorageError } from '../errors/index.js'
import { createRedisClient } from '../harness/connection.js'
import { defineHarness } from '../harness/defineHarness.js'
import type { Harness } from '../core/index.js'
import { moveWakeTime, RESERVED_PREFIX, SessionLog, type RecordOf, type RedisClient } from '../log/index.js'
import {
  DURABLE,
  isDurableTool,
  questionIdOf,
  replayOf,
  SecretStore,
  type DurableToolContext,
  type Park,
  type Step,
} from '../tool/index.js'
import type { DurableToolMarker } from '../tool/durableTool.js'
import { deletePrefixKeys } from './deleteKeys.js'
import { scriptedModel } from './scriptedModel.js'

/** A side effect as a provider saw it: what it did and the idempotency key it was given. */
export interface SideEffect {
  name: string
  idempotencyKey: string
}

/** Options of `exploreCrashes`. */
export interface ExploreCrashesOptions {
  /** The Redis to run on (a URL or an ioredis client); default redis://127.0.0.1:6379. */
  redis?: string | RedisClient
  /** Key prefix; default a new unique one, whose keys are deleted at the end. */
  prefix?: string
  /** The answer to give each `step.ask`, by step name. */
  answers?: Record<string, unknown>
  /** `ctx.context` of the call. */
  context?: unknown
  /**
   * The side effects your test provider recorded so far, in order (each with the key it was given):
   * how a side effect outside `step.do` is seen. Each `step.do`'s fn run is recorded by itself.
   */
  effects?: () => ReadonlyArray<SideEffect> | Promise<ReadonlyArray<SideEffect>>
}

/** A write of a call attempt (a step save, question, staged records, park, landing) and where the crash was put. */
export interface CrashPoint {
  /** Its place among the clean run's writes, from 0. */
  index: number
  write: string
  when: 'before' | 'after'
}

/** Something a crash at a point changed: a side effect under two keys, another result, or staged records landed twice. */
export interface CrashFinding {
  point: CrashPoint
  kind: 'two_keys' | 'result_differs' | 'landed_twice'
  message: string
  effect?: string
  keys?: string[]
}

/** What `exploreCrashes` found: the clean run's writes and result, each point tried, and every finding. */
export interface CrashReport {
  ok: boolean
  writes: string[]
  result: unknown
  points: Array<CrashPoint & { ok: boolean }>
  findings: CrashFinding[]
}

/** The crash: a StorageError, so the attempt ends as a worker's lost write does (the call is picked up again). */
class InjectedCrash extends StorageError {
  constructor(point: string) {
    super(`(crash injected at ${point})`, 'explore', new Error('injected crash'))
  }
}

/** What a tool may use for exploreCrashes to explore it (docs/testing.md). */
const EXPLORED = 'step.do, step.sleep, step.ask, step retries and ctx.append'
const WRITES = ['saveStep', 'saveStepRetry', 'askQuestion', 'stageRecords', 'parkCall', 'landResult'] as const
const CALL_ID = 'explored-call'
const MAX_ATTEMPTS = 50

function labelOf(method: (typeof WRITES)[number], args: unknown[]): string {
  if (method === 'stageRecords') return `stageRecords (${Array.isArray(args[1]) ? args[1].length : 0} record(s))`
  if (method === 'parkCall') return `parkCall (${String(args[1])})`
  if (method === 'landResult') return 'landResult'
  return `${method} \`${String(args[1])}\``
}

interface RunResult {
  writes: string[]
  effects: SideEffect[]
  kept: RecordOf<'harness.tool.result'> | undefined
  landed: string[]
}

/** The tool with every step.do's fn run recorded (its step name and key). */
function watched(tool: AnyServerTool, seen: () => SideEffect[]): AnyServerTool & DurableToolMarker {
  if (!isDurableTool(tool))
    throw new TypeError(`exploreCrashes: "${tool.name}" is not a durable tool (durableTool(...)); it explores durable tools only.`)
  const durable = tool[DURABLE]
  const execute = (input: unknown, ctx: DurableToolContext) => {
    const step: Step = {
      ...ctx.step,
      do: (name, fn, options) => ctx.step.do(name, (o) => (seen().push({ name, idempotencyKey: o.idempotencyKey }), fn(o)), options),
    }
    return durable.execute(input, { ...ctx, step })
  }
  return { ...tool, [DURABLE]: { ...durable, execute } }
}

/**
 * Runs a durable tool once against a real Redis to find its write points, then once per point and
 * side (before the write is applied, after it) with a crash injected there, followed by the recovery
 * a worker makes (a new attempt of the call), and reports every point where a side effect ran under
 * two idempotency keys, the result differs from the clean run's, or staged records landed twice.
 */
export async function exploreCrashes(tool: AnyServerTool, input: unknown, options: ExploreCrashesOptions = {}): Promise<CrashReport> {
  let effects: SideEffect[] = []
  const harness = defineHarness({ name: 'explore-crashes', adapter: scriptedModel([]), tools: [watched(tool, () => effects)] })
  const owned = typeof options.redis !== 'object'
  const client = typeof options.redis === 'object' ? options.redis : createRedisClient(options.redis ?? 'redis://127.0.0.1:6379')
  const prefix = options.prefix ?? `dh-explore-${randomUUID().slice(0, 8)}`
  const base = `explore-${randomUUID().slice(0, 8)}`
  const outside = async () => [...((await options.effects?.()) ?? [])]
  const run = async (session: string, crash?: Omit<CrashPoint, 'write'>): Promise<RunResult> => {
    effects = []
    const before = (await outside()).length
    const result = await runToEnd(harness, new SessionLog(client, prefix, session, { shards: 1 }), input, options, crash)
    return { ...result, effects: [...effects, ...(await outside()).slice(before)] }
  }
  try {
    const clean = await run(`${base}-clean`)
    const points: CrashReport['points'] = []
    const findings: CrashFinding[] = []
    for (const [index, write] of clean.writes.entries())
      for (const when of ['before', 'after'] as const) {
        const point = { index, write, when }
        const found = compare(point, clean, await run(`${base}-${index}-${when}`, point))
        findings.push(...found)
        points.push({ ...point, ok: found.length === 0 })
      }
    return { ok: findings.length === 0, writes: clean.writes, result: clean.kept, points, findings }
  } finally {
    if (options.prefix === undefined) await deletePrefixKeys(client, prefix)
    if (owned) client.disconnect()
  }
}

/** One call from its first attempt to its landing, crashing once at `crash`, then recovering as a worker does. */
async function runToEnd(
  harness: Harness,
  log: SessionLog,
  input: unknown,
  options: ExploreCrashesOptions,
  crash: Omit<CrashPoint, 'write'> | undefined,
): Promise<Omit<RunResult, 'effects'>> {
  const tool = harness.tools[0]!
  const writes: string[] = []
  let crashed = false
  // the first attempts write through this log, which counts the writes and crashes at the point
  const countWrite = async (method: (typeof WRITES)[number], args: unknown[]): Promise<unknown> => {
    if (crashed) throw new InjectedCrash('a write after the crash')
    const at = writes.push(labelOf(method, args)) - 1
    const here = crash?.index === at
    if (here && crash.when === 'before') throw ((crashed = true), new InjectedCrash(writes[at]!))
    const reply: unknown = await Reflect.apply(log.calls[method], log.calls, args)
    if (here && crash.when === 'after') throw ((crashed = true), new InjectedCrash(writes[at]!))
    return reply
  }
  const countingCalls = new Proxy(log.calls, {
    get(target, property, receiver) {
      const method = WRITES.find((w) => w === property)
      return method ? (...args: unknown[]) => countWrite(method, args) : Reflect.get(target, property, receiver)
    },
  })
  const counting = new Proxy(log, {
    get: (target, property, receiver) => (property === 'calls' ? countingCalls : Reflect.get(target, property, receiver)),
  })
  const call = { sessionId: log.sessionId, toolCallId: CALL_ID, name: tool.name, input, context: options.context }
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    const begin = await log.calls.beginCall(CALL_ID, tool.name, replayOf(tool), { harness: harness.name, version: harness.version })
    if (begin.kind === 'done') {
      const appended = (await log.stream.read()).filter((e) => !e.record.type.startsWith(RESERVED_PREFIX))
      return { writes, kept: (await log.calls.getCall(CALL_ID))?.result, landed: appended.map((e) => JSON.stringify(e.record)) }
    }
    const attempt = crashed ? log : counting
    const fence = { toolCallId: CALL_ID, epoch: begin.epoch }
    const secrets = new SecretStore()
    try {
      const outcome =
        begin.kind === 'cut'
          ? { error: { message: harness.durability.interruptedToolResult, code: 'interrupted' } }
          : await runCall(harness, attempt, call, begin, secrets, new CallAborts().open(undefined))
      if ('park' in outcome) {
        await attempt.calls.parkCall(fence, outcome.park.kind, outcome.park.until)
        await wake(log, outcome.park, options)
        continue
      }
      // as a tool job lands it: a cut call's tool may have done its work (a rerun keeps a `never` one, R19)
      await attempt.calls.landResult(
        fence,
        tool.name,
        await keptResult(harness, call, outcome, secrets, 0),
        begin.kind === 'cut' ? 'unknown' : '',
      )
    } catch (error) {
      if (!(error instanceof InjectedCrash)) throw error
    }
  }
  throw new Error(`exploreCrashes: the call did not land in ${MAX_ATTEMPTS} attempts.`)
}

/** Wakes a parked call at once: a sleep's stored wake time moves to now, an ask gets its answer from `options.answers`. */
async function wake(log: SessionLog, park: Park, options: ExploreCrashesOptions): Promise<void> {
  if (park.kind === 'sleep') return moveWakeTime(log, CALL_ID, park.stepName, Date.now())
  if (park.kind === 'retry') return new Promise((resolve) => setTimeout(resolve, Math.max(0, park.until - Date.now())))
  // an event wait's wake-up is a delivery to the (event, key) hash, another write path than the call's:
  // not one of the points explored here
  if (park.kind === 'event')
    throw new TypeError(
      `exploreCrashes: the tool waits for an event (step.waitForEvent "${park.stepName}"), which exploreCrashes does not explore: ` +
        `it explores ${EXPLORED}. Test an event wait with a host and host.sendEvent.`,
    )
  if (park.kind !== 'ask')
    throw new TypeError(`exploreCrashes: a call that parks for ${park.kind} is not explored: it explores ${EXPLORED}.`)
  if (!options.answers || !(park.stepName in options.answers))
    throw new TypeError(`exploreCrashes: the tool asks "${park.stepName}"; give its answer in options.answers["${park.stepName}"].`)
  await log.actions.answerQuestion(questionIdOf(CALL_ID, park.stepName), options.answers[park.stepName], CALL_ID)
}

function compare(point: CrashPoint, clean: RunResult, crashed: RunResult): CrashFinding[] {
  const at = `crash ${point.when} write ${point.index} (${point.write})`
  const findings: CrashFinding[] = []
  const keys = new Map<string, Set<string>>()
  for (const e of crashed.effects) keys.set(e.name, (keys.get(e.name) ?? new Set()).add(e.idempotencyKey))
  for (const [effect, set] of keys)
    if (set.size > 1)
      findings.push({
        point,
        kind: 'two_keys',
        effect,
        keys: [...set],
        message: `${at}: side effect \`${effect}\` ran under ${set.size} idempotency keys: ${[...set].join(', ')}`,
      })
  const shown = (r: RunResult) => JSON.stringify({ result: r.kept?.result, error: r.kept?.error })
  if (shown(clean) !== shown(crashed))
    findings.push({ point, kind: 'result_differs', message: `${at}: the call landed ${shown(crashed)}, the clean run ${shown(clean)}` })
  if (crashed.landed.length > clean.landed.length)
    findings.push({
      point,
      kind: 'landed_twice',
      message: `${at}: ${crashed.landed.length} appended record(s) landed, the clean run ${clean.landed.length}`,
    })
  return findings
}
