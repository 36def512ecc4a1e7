import { createHash } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { RedisClient } from '../client.js'
import type { EventScripts, LimitScripts } from './flowScripts.js'
import type { TurnScripts } from './turnScripts.js'

/**
 * The typed contract of our Lua scripts: for each `<name>-<numberOfKeys>.lua` of this folder, its
 * KEYS and ARGV as named tuples and its reply, in one place. `runScript` is the only way the
 * TypeScript side runs one (EVAL on a connection's first use, then EVALSHA; EVAL again on NOSCRIPT).
 */
type Arg = string | number
type Fenced = ['fenced', number]

/** What landing a call's result takes (includes/land.lua), the same for landResult and cancelCall. */
export type LandArgs = [
  toolCallId: string,
  epoch: number,
  record: string,
  openMember: string,
  publish: 'PUBLISH' | 'SPUBLISH',
  channel: string,
  messageKey: string,
]

export interface ScriptContract extends LimitScripts, EventScripts, TurnScripts {
  answerQuestion: {
    keys: [questions: string, log: string, openQuestions: string]
    args: [questionId: string, answer: string, record: string, now: number, openMember: string]
    reply: ['ok', string, string] | ['unknown'] | ['answered'] | ['expired'] | ['closed']
  }
  appendRecords: {
    keys: [log: string]
    args: string[]
    reply: string[]
  }
  askQuestion: {
    keys: [calls: string, steps: string, log: string, questions: string, openQuestions: string]
    args: [
      toolCallId: string,
      epoch: number,
      stepField: string,
      stepValue: string,
      record: string,
      questionId: string,
      question: string,
      now: number,
      openMember: string,
    ]
    reply: ['ok'] | ['exists', string] | Fenced
  }
  beginCall: {
    keys: [calls: string, log: string, staged: string, openCalls: string, inputs: string]
    args: [
      toolCallId: string,
      name: string,
      replay: 'safe' | 'never',
      now: number,
      openMember: string,
      harness: string,
      inputId: string,
      fingerprint: string,
      version: string,
    ]
    reply:
      | [kind: 'done' | 'fresh' | 'resume' | 'rerun' | 'cut', epoch: number, attempt: number, input?: string, version?: string]
      | ['unverified']
  }
  cancelCall: {
    keys: [calls: string, log: string, staged: string, openCalls: string, questions: string, openQuestions: string, conversation: string]
    /** the landing (the parked epoch seen as its epoch), then pairs of questionId and open questions member */
    args: [...LandArgs, ...questions: string[]]
    reply: ['ok', string] | ['done'] | ['running'] | ['moved'] | ['unknown']
  }
  fillConversation: {
    keys: [conversation: string]
    args: string[]
    reply: ['filled'] | ['complete']
  }
  landResult: {
    keys: [calls: string, log: string, staged: string, openCalls: string, conversation: string]
    args: LandArgs
    reply: ['ok', string] | Fenced
  }
  logModelResponse: {
    keys: [log: string, inputs: string, calls: string, conversation: string, ...toolIndexes: string[]]
    /** inputId, expected responses, record, the turn's member, its tool names (JSON), then pairs of stored call id and fingerprint */
    args: [inputId: string, expected: number, record: string, member: string, tools: string, ...idsAndFingerprints: string[]]
    reply: ['ok', string] | ['stale'] | ['unknown'] | ['taken', string]
  }
  parkCall: {
    keys: [calls: string, log: string]
    args: [toolCallId: string, epoch: number, record: string]
    reply: ['ok'] | Fenced
  }
  readConversation: {
    keys: [conversation: string, log: string]
    args: []
    reply: [header: string, entries: Array<[string, string[]]>]
  }
  removeSession: {
    keys: [
      log: string,
      steps: string,
      calls: string,
      questions: string,
      inputs: string,
      line: string,
      conversation: string,
      live: string,
      sessions: string,
      ...turnIndexes: string[],
    ]
    args: [mode: 'check' | 'remove', exportedLastId: string, sessionId: string]
    reply: ['open', 'turn' | 'call'] | ['idle', string, ...names: string[]] | ['moved', string] | ['removed']
  }
  requestCall: {
    keys: [calls: string, log: string, sessions: string, openCalls: string]
    args: [
      toolCallId: string,
      fingerprint: string,
      record: string,
      now: number,
      sessionId: string,
      beginFor: string,
      name: string,
      openMember: string,
      version: string,
    ]
    reply: ['added', string] | ['exists'] | ['conflict']
  }
  saveStep: {
    keys: [calls: string, steps: string, log: string]
    args: [toolCallId: string, epoch: number, stepField: string, value: string, record: string]
    reply: ['ok'] | ['exists', string] | Fenced
  }
  saveStepRetry: {
    keys: [calls: string, steps: string, log: string]
    args: [toolCallId: string, epoch: number, retryField: string, state: string, tries: number, record: string]
    reply: ['ok'] | ['exists', string] | Fenced
  }
  turnRecord: {
    keys: [log: string, inputs: string, conversation: string]
    args: [inputId: string, expected: number | '', record: string, mark: 'paused' | 'resumed' | '', attempt: number | '']
    reply: ['ok', string] | ['stale'] | ['unknown'] | ['settled'] | ['not_paused']
  }
  stageRecords: {
    keys: [calls: string, staged: string]
    args: [toolCallId: string, epoch: number, first: number, ...records: string[]]
    reply: ['ok'] | Fenced
  }
}
export type ScriptName = keyof ScriptContract

const here = dirname(fileURLToPath(import.meta.url))

function loadScripts(): Map<string, { numberOfKeys: number; lua: string; sha: string }> {
  const scripts = new Map<string, { numberOfKeys: number; lua: string; sha: string }>()
  for (const file of readdirSync(here).filter((f) => f.endsWith('.lua'))) {
    const match = /^(\w+)-(\d+)\.lua$/.exec(file)
    if (!match) throw new Error(`Lua script file name must be <name>-<keys>.lua: ${file}`)
    const lua = readFileSync(join(here, file), 'utf8').replace(/^--@include (\w+)$/gm, (_, inc: string) =>
      readFileSync(join(here, 'includes', `${inc}.lua`), 'utf8'),
    )
    scripts.set(match[1]!, { numberOfKeys: Number(match[2]), lua, sha: createHash('sha1').update(lua).digest('hex') })
  }
  return scripts
}

const scripts = loadScripts()

/** sha1 -> script name of every script, as EVALSHA names it (for the bench's command profile). */
export function scriptShas(): Map<string, string> {
  return new Map([...scripts].map(([name, { sha }]) => [sha, name]))
}

/** After a write, wait until this many replicas have it (`WAIT replicas timeoutMs`). */
export interface ReplicaWait {
  replicas: number
  timeoutMs: number
}

/**
 * Scripts whose KEYS go on past the file name's count: removeSession (the turns, tool and tag indexes
 * it cleans), addInput (the tag indexes of the input's metadata), logModelResponse (the tool indexes
 * of the tools the response calls).
 */
const TRAILING_KEYS: ReadonlySet<ScriptName> = new Set(['removeSession', 'addInput', 'logModelResponse'])

/** The scripts each connection has sent once (as EVAL, with their source): later uses send EVALSHA. */
const sentOn = new WeakMap<RedisClient, Set<ScriptName>>()

/** Runs one script with its named KEYS and ARGV; the reply is typed by the contract. */
export async function runScript<N extends ScriptName>(
  redis: RedisClient,
  name: N,
  keys: ScriptContract[N]['keys'],
  args: ScriptContract[N]['args'],
  wait?: ReplicaWait,
): Promise<ScriptContract[N]['reply']> {
  const script = scripts.get(name)
  // the file name's key count and the contract must agree, or KEYS and ARGV would shift (a script
  // of TRAILING_KEYS takes more keys after its fixed ones)
  if (!script || (script.numberOfKeys !== keys.length && !(TRAILING_KEYS.has(name) && keys.length > script.numberOfKeys)))
    throw new Error(`Script ${name}: the contract names ${keys.length} keys, the .lua file ${script?.numberOfKeys}.`)
  const keysAndArgs = [keys.length, ...keys, ...(args as Arg[])]
  // a script's first use on a connection sends its source: no NOSCRIPT round trip on a new server, and
  // a command sent behind it on the same connection (runTool's job add) runs after it, not before
  let sent = sentOn.get(redis)
  if (!sent) sentOn.set(redis, (sent = new Set()))
  if (!sent.has(name)) {
    sent.add(name)
    return (await send(redis, ['eval', script.lua, ...keysAndArgs], wait)) as ScriptContract[N]['reply']
  }
  try {
    return (await send(redis, ['evalsha', script.sha, ...keysAndArgs], wait)) as ScriptContract[N]['reply']
  } catch (error) {
    // a server that never saw the script (new, restarted, flushed): it gets the source once
    if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error
    return (await send(redis, ['eval', script.lua, ...keysAndArgs], wait)) as ScriptContract[N]['reply']
  }
}

/**
 * One EVALSHA or EVAL, as a plain command (never ioredis defineCommand: a command defined after an
 * auto-pipeline was opened is missing from it, which broke the whole pipeline with an uncaught
 * `results[i] is not iterable`, ioredis #1931; docs/decisions.md). With `wait`, the script and a
 * `WAIT` go in one pipeline, so on a Cluster the WAIT reaches the master that ran the script; fewer
 * acknowledgements than asked throw (the caller retries: our writes are idempotent when re-sent).
 */
async function send(redis: RedisClient, [command, ...rest]: [string, ...Arg[]], wait: ReplicaWait | undefined): Promise<unknown> {
  if (!wait) return redis.call(command, ...rest)
  const pipeline = redis.pipeline()
  pipeline.call(command, ...rest)
  pipeline.call('WAIT', wait.replicas, wait.timeoutMs)
  const [[scriptError, reply], [waitError, acked]] = (await pipeline.exec()) as Array<[Error | null, unknown]> as [
    [Error | null, unknown],
    [Error | null, unknown],
  ]
  if (scriptError) throw scriptError
  if (waitError) throw waitError
  if (Number(acked) < wait.replicas)
    throw new Error(`${Number(acked)} of ${wait.replicas} replica(s) acknowledged the write within ${wait.timeoutMs} ms (WAIT)`)
  return reply
}
