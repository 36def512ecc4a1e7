import type { BusyMode } from '../../core/index.js'
import { arg, defineScript, num, reply, text } from './script.js'

/**
 * The scripts of a session's turns and log: a prompt opens a turn (and lists it in its tag indexes),
 * model responses and turn records join it, a settle closes it, a rerun opens it again (keys.ts
 * turnIndexKey); the conversation projection, unfenced appends and retention's removal.
 */
export const addInput = defineScript({
  name: 'addInput',
  keys: ['log', 'inputs', 'sessions', 'openTurns', 'line', 'conversation', 'usage', 'openIndex'],
  trailingKeys: 'tagIndexes',
  args: {
    inputId: text,
    text,
    record: text,
    now: num,
    sessionId: text,
    openMember: text,
    harness: text,
    parent: text,
    busy: arg<BusyMode>(),
    context: text,
    metadata: text,
    principal: text,
    priority: text,
    textCheck: text,
  },
  reply: reply<
    | ['added', string, 'run' | 'queued' | 'steered', string]
    | ['busy', string]
    | ['exists', string, 'open' | 'settled', 'first' | '']
    | ['conflict']
  >(),
})

export const logModelResponse = defineScript({
  name: 'logModelResponse',
  keys: ['log', 'inputs', 'calls', 'conversation', 'usage', 'usageDay'],
  trailingKeys: 'toolIndexes',
  args: { inputId: text, expected: num, record: text, member: text, tools: text, counts: text, model: text, tryId: text },
  /** pairs of stored call id and fingerprint */
  trailingArgs: 'idsAndFingerprints',
  reply: reply<['ok', string] | ['stale'] | ['unknown'] | ['taken', string]>(),
})

export const turnRecord = defineScript({
  name: 'turnRecord',
  keys: ['log', 'inputs', 'conversation'],
  args: {
    inputId: text,
    expected: arg<number | ''>(),
    record: text,
    mark: arg<'paused' | 'resumed' | ''>(),
    attempt: arg<number | ''>(),
  },
  reply: reply<['ok', string] | ['stale'] | ['unknown'] | ['settled'] | ['not_paused']>(),
})

export const settleInput = defineScript({
  name: 'settleInput',
  keys: ['log', 'inputs', 'openTurns', 'line', 'conversation', 'openIndex', 'outcomeIndex', 'usage', 'usageDay'],
  args: {
    inputId: text,
    record: text,
    openMember: text,
    publish: arg<'PUBLISH' | 'SPUBLISH'>(),
    channel: text,
    messageKey: text,
    outcome: arg<'completed' | 'failed' | 'aborted'>(),
    now: num,
  },
  reply: reply<['settled', string, string] | ['already', string, string] | ['unknown']>(),
})

export const rerunTurn = defineScript({
  name: 'rerunTurn',
  keys: ['log', 'inputs', 'calls', 'openTurns', 'line', 'conversation', 'openIndex', 'failedIndex', 'abortedIndex', 'steps'],
  /** again: JSON array of the candidate call ids the operator runs again on purpose */
  args: { inputId: text, rerunId: text, now: num, openMember: text, principal: text, again: text },
  trailingArgs: 'toolCallIds',
  reply: reply<
    ['rerun', string, string] | ['exists'] | ['unknown'] | ['open'] | ['completed'] | ['landed', string] | ['pending', string]
  >(),
})

export const readConversation = defineScript({
  name: 'readConversation',
  keys: ['conversation', 'log', 'inputs'],
  args: { since: arg<'all' | 'compaction'>() },
  reply: reply<[header: string, entries: Array<[string, string[]]>, partial: '0' | '1']>(),
})

export const logCompaction = defineScript({
  name: 'logCompaction',
  keys: ['log', 'inputs', 'conversation', 'usage', 'usageDay', 'trims'],
  args: {
    base: text,
    throughEntry: text,
    record: text,
    counts: text,
    model: text,
    inputId: text,
    principal: text,
    trimAfter: text,
    trimDue: text,
    sessionId: text,
  },
  reply: reply<['ok', string] | ['stale', string]>(),
})

export const forkSession = defineScript({
  name: 'forkSession',
  keys: ['log', 'inputs', 'sessions'],
  args: { entries: text, inputs: text, record: text, sessionId: text, now: num },
  reply: reply<['forked', string] | ['exists']>(),
})

export const fillConversation = defineScript({
  name: 'fillConversation',
  keys: ['conversation'],
  args: {},
  trailingArgs: 'entryIds',
  reply: reply<['filled'] | ['complete']>(),
})

export const appendRecords = defineScript({
  name: 'appendRecords',
  keys: ['log'],
  args: {},
  trailingArgs: 'records',
  reply: reply<string[]>(),
})

export const removeSession = defineScript({
  name: 'removeSession',
  keys: ['log', 'steps', 'calls', 'questions', 'inputs', 'line', 'conversation', 'live', 'sessions', 'usage', 'tree', 'trims', 'budget'],
  trailingKeys: 'turnIndexes',
  args: { mode: arg<'check' | 'remove'>(), exportedLastId: text, sessionId: text },
  reply: reply<['open', 'turn' | 'call'] | ['idle', string, ...names: string[]] | ['moved', string] | ['removed']>(),
})

export const trimSession = defineScript({
  name: 'trimSession',
  keys: ['log', 'inputs', 'calls', 'steps', 'questions', 'conversation', 'trims', 'usage', 'tree'],
  trailingKeys: 'turnIndexes',
  args: { sessionId: text, cut: text, inputIds: text, toolCallIds: text, steps: text, questionIds: text, nextDue: text, latest: text },
  reply: reply<['trimmed', number] | ['open', string]>(),
})

export const rescheduleTrim = defineScript({
  name: 'rescheduleTrim',
  keys: ['inputs', 'trims'],
  args: { sessionId: text, latest: text, due: text },
  reply: reply<'ok'>(),
})

export const seedUsage = defineScript({
  name: 'seedUsage',
  keys: ['log', 'usage'],
  args: { lastId: text },
  trailingArgs: 'fieldsAndValues',
  reply: reply<['ok'] | ['moved'] | ['whole']>(),
})

/** A settled child agent's spend added to its tree's total at the root, once (src/log/sessionUsage.ts). */
export const rollUpUsage = defineScript({
  name: 'rollUpUsage',
  keys: ['usage'],
  args: { child: text },
  trailingArgs: 'metricsAndValues',
  reply: reply<0 | 1>(),
})

export const logUsage = defineScript({
  name: 'logUsage',
  keys: ['log', 'inputs', 'usage', 'usageDay'],
  args: { inputId: text, progress: num, record: text, counts: text, model: text, tryId: text },
  reply: reply<['ok', string] | ['counted'] | ['unknown']>(),
})

export const beginModelTry = defineScript({
  name: 'beginModelTry',
  keys: ['log', 'inputs', 'usage', 'usageDay'],
  args: { inputId: text, try: text },
  reply: reply<['ok', string] | ['settled'] | ['unknown']>(),
})

export const reserveBudget = defineScript({
  name: 'reserveBudget',
  keys: ['budget'],
  args: { scope: text, tryId: text, estimate: text, max: text, storeMax: text, leaseMs: num, ttlMs: text, onExceeded: text },
  reply: reply<['ok'] | ['held'] | ['over', string, string, string, string, string, string]>(),
})

export const settleBudget = defineScript({
  name: 'settleBudget',
  keys: ['budget'],
  args: { scope: text, tryId: text, actual: text },
  reply: reply<['ok'] | ['none']>(),
})
