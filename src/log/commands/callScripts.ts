import { arg, defineScript, num, reply, text } from './script.js'

/**
 * The scripts of a tool call's ledger: its request and begin, the fenced writes of an attempt (step,
 * retry, question, staged records, park, land), answers, and a cancel. Their KEYS and ARGV are the
 * headers of the `.lua` files of the same names.
 */
type Fenced = ['fenced', number]

/**
 * How a landing leaves a `replay: 'never'` call's tool (landResult.lua), which decides what a rerun
 * does with its error (R19): 'unknown' its tool began and nobody knows whether it finished (cut,
 * aborted, timed out: the rerun keeps it); 'asBefore' as its state says (a park inside the tool set
 * it: a cancel at the begin); '' the tool ended on its own, or never ran (the rerun runs it again).
 */
export type ToolEnd = 'unknown' | 'asBefore' | ''

/** What landing a call's result takes (includes/land.lua), the same for landResult and cancelCall. */
const landArgs = {
  toolCallId: text,
  epoch: num,
  record: text,
  openMember: text,
  /** '': no message (landResult, when its only waiter is in the landing's process: SessionLogOptions.awaitedOnlyHere) */
  publish: arg<'PUBLISH' | 'SPUBLISH' | ''>(),
  channel: text,
  messageKey: text,
}

/** landResult's: the landing, then how the call's tool ended (ToolEnd: what a rerun does with a `never` call's error). */
const landResultArgs = { ...landArgs, toolEnd: arg<ToolEnd>() }

/** What a runTool request logs (includes/request.lua), the same for requestCall and startCall. */
const requestArgs = {
  toolCallId: text,
  fingerprint: text,
  record: text,
  now: num,
  sessionId: text,
  beginFor: text,
  name: text,
  openMember: text,
  version: text,
  /** '1': harness.tool.started is stored as its array (the deployment's record format 2: src/log/storedRecords.ts) */
  compact: arg<'1' | ''>(),
}

export const requestCall = defineScript({
  name: 'requestCall',
  keys: ['calls', 'log', 'sessions', 'openCalls'],
  args: requestArgs,
  reply: reply<['added', string] | ['exists'] | ['conflict']>(),
})

/** requestCall, and its job started in the same write under a local lane's slot (startCall.lua). */
export const startCall = defineScript({
  name: 'startCall',
  keys: ['calls', 'log', 'sessions', 'openCalls', 'job', 'active', 'wait', 'prioritized', 'marker', 'meta', 'events', 'id'],
  args: { ...requestArgs, jobId: text, data: text, opts: text, token: text, lockMs: num, worker: text, wake: arg<'1' | ''>() },
  reply: reply<['started', string, 0 | 1] | ['queued', string] | ['exists'] | ['conflict']>(),
})

export const beginCall = defineScript({
  name: 'beginCall',
  keys: ['calls', 'log', 'staged', 'openCalls', 'inputs'],
  args: {
    toolCallId: text,
    name: text,
    replay: arg<'safe' | 'never'>(),
    now: num,
    openMember: text,
    harness: text,
    inputId: text,
    fingerprint: text,
    version: text,
    compact: arg<'1' | ''>(),
  },
  reply: reply<
    [kind: 'done' | 'fresh' | 'resume' | 'rerun' | 'cut', epoch: number, attempt: number, input?: string, version?: string] | ['unverified']
  >(),
})

export const saveStep = defineScript({
  name: 'saveStep',
  keys: ['calls', 'steps', 'log'],
  args: { toolCallId: text, epoch: num, stepField: text, value: text, record: text },
  reply: reply<['ok'] | ['exists', string] | Fenced>(),
})

export const saveStepRetry = defineScript({
  name: 'saveStepRetry',
  keys: ['calls', 'steps', 'log'],
  args: { toolCallId: text, epoch: num, retryField: text, state: text, tries: num, record: text },
  reply: reply<['ok'] | ['exists', string] | Fenced>(),
})

export const askQuestion = defineScript({
  name: 'askQuestion',
  keys: ['calls', 'steps', 'log', 'questions', 'openQuestions'],
  args: {
    toolCallId: text,
    epoch: num,
    stepField: text,
    stepValue: text,
    record: text,
    questionId: text,
    question: text,
    now: num,
    openMember: text,
  },
  reply: reply<['ok'] | ['exists', string] | Fenced>(),
})

export const answerQuestion = defineScript({
  name: 'answerQuestion',
  keys: ['questions', 'log', 'openQuestions'],
  args: { questionId: text, answer: text, record: text, now: num, openMember: text },
  reply: reply<['ok', string, string] | ['unknown'] | ['answered'] | ['expired'] | ['closed']>(),
})

export const stageRecords = defineScript({
  name: 'stageRecords',
  keys: ['calls', 'staged'],
  args: { toolCallId: text, epoch: num, first: num },
  trailingArgs: 'records',
  reply: reply<['ok'] | Fenced>(),
})

export const parkCall = defineScript({
  name: 'parkCall',
  keys: ['calls', 'log', 'eventTimers', 'job'],
  args: {
    toolCallId: text,
    epoch: num,
    record: text,
    timerMember: text,
    until: num,
    inTool: arg<'1' | ''>(),
    jobId: text,
    jobData: text,
  },
  reply: reply<['ok'] | Fenced>(),
})

/** A crashed worker set's running call gets a new epoch (crashWorkers.ts): its attempt's later writes are refused. */
export const fenceAttempt = defineScript({
  name: 'fenceAttempt',
  keys: ['calls'],
  args: { toolCallId: text },
  reply: reply<0 | 1>(),
})

export const clearEventTimer = defineScript({
  name: 'clearEventTimer',
  keys: ['calls', 'eventTimers'],
  args: { toolCallId: text, timerMember: text, epoch: num },
  reply: reply<0 | 1>(),
})

export const landResult = defineScript({
  name: 'landResult',
  keys: ['calls', 'log', 'staged', 'openCalls', 'conversation'],
  args: landResultArgs,
  reply: reply<['ok', string] | Fenced>(),
})

export const cancelCall = defineScript({
  name: 'cancelCall',
  keys: ['calls', 'log', 'staged', 'openCalls', 'questions', 'openQuestions', 'conversation'],
  /** the landing (the parked epoch seen as its epoch), then pairs of questionId and open questions member */
  args: landArgs,
  trailingArgs: 'questions',
  reply: reply<['ok', string] | ['done'] | ['running'] | ['moved'] | ['unknown']>(),
})
