import { scripts } from './commands/index.js'
import { namedIndexKeys } from './keys.js'
import { objectJson } from './storedRecords.js'
import { compareIds } from './sharedReader.js'
import { isRecord, type LogStream } from './stream.js'

/**
 * Trimming (compaction.trimAfter, docs/compaction.md "Trimming"): the log entries before the input of
 * the last turn an old enough compaction took out of the model's view leave Redis, with the inputs,
 * calls, steps and questions only they used, after the host's retention export got them.
 */
export interface TrimPlan {
  /** The first entry id kept. */
  cut: string
  /** The entries before the cut, as retention exports them (`{"id","record"}` a line). */
  jsonl: string
  entries: number
  inputIds: string[]
  toolCallIds: string[]
  steps: Array<[toolCallId: string, step: string]>
  questionIds: string[]
  /** The turns, tool and tag index names of the inputs removed (removeSession.lua's 'check' names). */
  names: string[]
  /** When the session is due again: its next compaction's time plus the period (undefined: none waits). */
  nextDue?: number
  /** The entry id of the latest compaction the plan read ('' none): the index is set only while it is still the latest. */
  latest: string
  /** The BullMQ jobs of the inputs and calls removed, by harness: finished ones go too, so an id used again runs. */
  jobs: Array<{ harness: string; inputIds: string[]; toolCallIds: string[] }>
}

/** When nothing can be trimmed yet: when to look again (undefined: never, until a compaction asks). */
export interface TrimLater {
  later?: number
  latest: string
}

const STEP_TYPES = new Set([
  'harness.tool.step',
  'harness.tool.step.retry',
  'harness.tool.sleep',
  'harness.tool.ask',
  'harness.tool.wait',
  'harness.tool.event',
])
/** An open item holds its entries in Redis: looked at again this much later. */
const OPEN_RETRY_MS = 3600_000

interface Span {
  first: string
  last: string
}

/** The trim period a session's read pointer (its "\0compaction" field) holds, in ms; undefined: none. */
function trimPeriod(pointer: string | null | undefined): number | undefined {
  const parsed: { trimAfter?: unknown } | null = pointer ? JSON.parse(pointer) : null
  return typeof parsed?.trimAfter === 'number' && parsed.trimAfter > 0 ? parsed.trimAfter : undefined
}

/**
 * Reads the session's log and picks what a trim of its compactions older than its trim period (the
 * read pointer's, the latest compaction's trimAfter) removes at `now`.
 */
export async function planTrim(stream: LogStream, now: number): Promise<TrimPlan | TrimLater> {
  const pointer = await stream.command('trim', () => stream.redis.hget(stream.keys.inputs, '\0compaction'))
  const period = trimPeriod(pointer)
  // no period any more (a harness without trimAfter compacted last): the session leaves the index
  if (!period) return { latest: pointer ? String(JSON.parse(pointer).id ?? '') : '' }
  const raw: Array<[string, string[]]> = []
  for (let from = '-'; ;) {
    const page = await stream.command('trim', () => stream.redis.xrange(stream.keys.log, from, '+', 'COUNT', 1000))
    raw.push(...page)
    if (page.length < 1000) break
    from = `(${page.at(-1)![0]}`
  }
  const inputs = new Map<string, Span>()
  const calls = new Map<string, Span>()
  const steps = new Map<string, Set<string>>()
  const questions = new Map<string, string>()
  const cuts: Array<{ at: number; entryId: string }> = []
  let latest = ''
  const touch = (items: Map<string, Span>, key: string, id: string) => {
    const span = items.get(key)
    if (span) span.last = id
    else items.set(key, { first: id, last: id })
  }
  for (const entry of raw) {
    const parsed = stream.parseEntry(entry)
    if (!parsed) continue
    const { record } = parsed
    const inputId: unknown = Reflect.get(record, 'inputId')
    const toolCallId: unknown = Reflect.get(record, 'toolCallId')
    if (typeof inputId === 'string') touch(inputs, inputId, parsed.id)
    if (typeof toolCallId === 'string') {
      touch(calls, toolCallId, parsed.id)
      const name: unknown = Reflect.get(record, 'name')
      const questionId: unknown = Reflect.get(record, 'questionId')
      if (STEP_TYPES.has(record.type) && typeof name === 'string')
        (steps.get(toolCallId) ?? steps.set(toolCallId, new Set()).get(toolCallId)!).add(name)
      if (typeof questionId === 'string') questions.set(questionId, toolCallId)
    }
    if (isRecord(parsed, 'harness.compaction')) {
      latest = parsed.id
      if (parsed.record.through) cuts.push({ at: parsed.record.at, entryId: parsed.record.through.entryId })
    }
  }
  const olderThan = now - period
  const due = cuts.filter((c) => c.at <= olderThan).at(-1)
  const next = cuts.find((c) => c.at > olderThan)
  if (!due) return next ? { later: next.at + period, latest } : { latest }
  let cut = due.entryId
  // an item still open keeps its entries: the cut stops at its first one
  const inputIds = [...inputs].filter(([, s]) => compareIds(s.first, cut) < 0).map(([id]) => id)
  const callIds = [...calls].filter(([, s]) => compareIds(s.first, cut) < 0).map(([id]) => id)
  const states = inputIds.length ? await stream.redis.hmget(stream.keys.inputs, ...inputIds) : []
  const callStates = callIds.length
    ? await stream.redis.hmget(stream.keys.calls, ...callIds.flatMap((id) => [id, `${id}\0req`, `${id}\0names`]))
    : []
  type Tags = { status: string; harness?: string; tools?: string[]; metadata?: Record<string, unknown> }
  const settled = new Map<string, Tags>()
  inputIds.forEach((id, i) => {
    const state: Tags | undefined = states[i] ? JSON.parse(states[i]) : undefined
    if (state?.status === 'settled') settled.set(id, state)
    else if (state && compareIds(inputs.get(id)!.first, cut) < 0) cut = inputs.get(id)!.first
  })
  const landed = new Set<string>()
  const harnessOf = new Map<string, string>()
  callIds.forEach((id, i) => {
    const stored: { s?: string } | undefined = callStates[3 * i] ? JSON.parse(callStates[3 * i]!) : undefined
    const state = stored?.s
    const names: string[] | undefined = callStates[3 * i + 2] ? JSON.parse(callStates[3 * i + 2]!) : undefined
    if (names) harnessOf.set(id, names[1] ?? '')
    const open = state ? state !== 'done' && state !== 'again' : callStates[3 * i + 1] !== null
    if (!open) landed.add(id)
    else if (compareIds(calls.get(id)!.first, cut) < 0) cut = calls.get(id)!.first
  })
  const before = (s: Span) => compareIds(s.last, cut) < 0
  const kept = raw.filter(([id]) => compareIds(id, cut) < 0)
  if (kept.length === 0) return { later: now + OPEN_RETRY_MS, latest }
  const removedInputs = [...settled.keys()].filter((id) => before(inputs.get(id)!))
  const removedCalls = [...landed].filter((id) => before(calls.get(id)!))
  const removed = new Set(removedCalls)
  const names = new Set<string>()
  for (const id of removedInputs) {
    const { harness, tools = [], metadata } = settled.get(id)!
    if (!harness) continue
    names.add(harness)
    for (const tool of tools) names.add(`\0tool\0${harness}\0${tool}`)
    for (const [key, value] of Object.entries(metadata ?? {})) names.add(`\0tag\0${harness}\0${key}\0${String(value)}`)
  }
  const jobs = new Map<string, { harness: string; inputIds: string[]; toolCallIds: string[] }>()
  const jobsOf = (harness: string) => jobs.get(harness) ?? jobs.set(harness, { harness, inputIds: [], toolCallIds: [] }).get(harness)!
  for (const id of removedInputs) if (settled.get(id)!.harness) jobsOf(settled.get(id)!.harness!).inputIds.push(id)
  for (const id of removedCalls) if (harnessOf.get(id)) jobsOf(harnessOf.get(id)!).toolCallIds.push(id)
  return {
    cut,
    jobs: [...jobs.values()],
    jsonl: kept.map(([id, fields]) => `{"id":${JSON.stringify(id)},"record":${objectJson(fields[1])}}\n`).join(''),
    entries: kept.length,
    inputIds: removedInputs,
    toolCallIds: removedCalls,
    steps: removedCalls.flatMap((id) => [...(steps.get(id) ?? [])].map((name): [string, string] => [id, name])),
    questionIds: [...questions].filter(([, call]) => removed.has(call)).map(([id]) => id),
    names: [...names],
    ...(next ? { nextDue: next.at + period } : {}),
    latest,
  }
}

/** Removes what `plan` names in one write (trimSession.lua): 'open' when an item of it opened again since. */
export async function applyTrim(stream: LogStream, plan: TrimPlan): Promise<['trimmed', number] | ['open', string]> {
  return stream.script(scripts.trimSession, {
    keys: { ...stream.scriptKeys, turnIndexes: namedIndexKeys(stream.prefix, stream.shard, stream.shards, plan.names) },
    args: {
      sessionId: stream.sessionId,
      cut: plan.cut,
      inputIds: JSON.stringify(plan.inputIds),
      toolCallIds: JSON.stringify(plan.toolCallIds),
      steps: JSON.stringify(plan.steps),
      questionIds: JSON.stringify(plan.questionIds),
      nextDue: plan.nextDue === undefined ? '' : String(plan.nextDue),
      latest: plan.latest,
    },
  })
}

/**
 * When a pass that trims nothing looks at the session again (`later`; undefined: it leaves the trim
 * index), set only while the latest compaction is still the one the pass read (rescheduleTrim.lua).
 */
export async function rescheduleTrim(stream: LogStream, plan: TrimLater): Promise<void> {
  await stream.script(scripts.rescheduleTrim, {
    keys: { inputs: stream.keys.inputs, trims: stream.scriptKeys.trims },
    args: { sessionId: stream.sessionId, latest: plan.latest, due: plan.later === undefined ? '' : String(plan.later) },
  })
}
