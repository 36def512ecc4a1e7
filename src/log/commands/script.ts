import { createHash } from 'node:crypto'
import type { RedisClient } from '../client.js'
import { lua, type LuaName } from './lua.generated.js'

/**
 * One Lua script of this folder, declared once: its KEYS and ARGV by name, in the order the script
 * reads them (the header of `<name>.lua` lists the same names; test/unit/luaScripts.test.ts compares
 * them), and its reply. Callers pass objects (`{ keys: { calls, log }, args: { toolCallId, epoch } }`),
 * never positions, so two arguments of one type cannot be swapped.
 */
type Arg = string | number

/** The type of one ARGV value, as a declaration names it (`arg<'safe' | 'never'>()`); nothing at run time. */
export interface ArgType<T extends Arg> {
  readonly type?: T
}
/** A script's reply type (`reply<['ok'] | ['fenced', number]>()`); nothing at run time. */
export interface ReplyType<R> {
  readonly reply?: R
}
export const arg = <T extends Arg>(): ArgType<T> => ({})
export const text: ArgType<string> = {}
export const num: ArgType<number> = {}
export const reply = <R>(): ReplyType<R> => ({})

type ArgTypes = Readonly<Record<string, ArgType<Arg>>>

interface Declaration<N, K extends readonly string[], A extends ArgTypes, TK, TA, R> {
  name: N
  keys: K
  /** ARGV by name, in order (an object's own string keys keep the order they were written in). */
  args: A
  /** The name of the KEYS past the fixed ones (a list of any length), if the script takes such. */
  trailingKeys?: TK
  /** The name of the ARGV past the fixed ones (strings), if the script takes such. */
  trailingArgs?: TA
  reply: ReplyType<R>
}

type Named<Name, T> = [Name] extends [string] ? { [P in Name]: T } : unknown
type KeysIn<S extends AnyScript> = { [P in S['keys'][number]]: string } & Named<NonNullable<S['trailingKeys']>, readonly string[]>
type ArgsIn<S extends AnyScript> = { [P in keyof S['argTypes']]: S['argTypes'][P] extends ArgType<infer T> ? T : never } & Named<
  NonNullable<S['trailingArgs']>,
  readonly string[]
>

/** What one run of script `S` takes: its keys and its arguments, each by name. */
export interface ScriptInput<S extends AnyScript> {
  keys: KeysIn<S>
  args: ArgsIn<S>
}
export type ScriptReply<S extends AnyScript> = NonNullable<S['replyType']['reply']>

export interface Script<N extends LuaName, K extends string, A extends ArgTypes, TK extends string, TA extends string, R> {
  readonly name: N
  readonly keys: readonly K[]
  readonly argTypes: A
  readonly args: readonly string[]
  readonly trailingKeys: TK | undefined
  readonly trailingArgs: TA | undefined
  readonly replyType: ReplyType<R>
  /** The source sent with EVAL (its --@include fragments inlined at build time) and its sha1 for EVALSHA. */
  readonly lua: string
  readonly sha: string
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bound every script's declaration satisfies
export type AnyScript = Script<LuaName, string, ArgTypes, string, string, any>

/** Declares the script `<name>.lua`: its source comes from lua.generated.ts (scripts/generateLua.ts). */
export function defineScript<
  const N extends LuaName,
  const K extends readonly string[],
  const A extends ArgTypes,
  R,
  const TK extends string = never,
  const TA extends string = never,
>(d: Declaration<N, K, A, TK, TA, R>): Script<N, K[number], A, TK, TA, R> {
  const source = lua[d.name]
  return {
    name: d.name,
    keys: d.keys,
    argTypes: d.args,
    args: Object.keys(d.args),
    trailingKeys: d.trailingKeys,
    trailingArgs: d.trailingArgs,
    replyType: d.reply,
    lua: source,
    sha: createHash('sha1').update(source).digest('hex'),
  }
}

/** After a write, wait until this many replicas have it (`WAIT replicas timeoutMs`). */
export interface ReplicaWait {
  replicas: number
  timeoutMs: number
}

/** The scripts each connection has sent once (as EVAL, with their source): later uses send EVALSHA. */
const sentOn = new WeakMap<RedisClient, Set<string>>()

/**
 * Runs one script with its KEYS and ARGV by name; the reply is typed by the declaration. Not an
 * async function: the reply's promise is ioredis's own (a step's every extra promise is a turn of the loop).
 */
export function runScript<S extends AnyScript>(
  redis: RedisClient,
  script: S,
  input: ScriptInput<S>,
  wait?: ReplicaWait,
): Promise<ScriptReply<S>> {
  // the one place a reply gets its type: the script's header and its declaration say what it answers
  return sendScript(redis, script, input, wait) as Promise<ScriptReply<S>>
}

function sendScript<S extends AnyScript>(redis: RedisClient, script: S, input: ScriptInput<S>, wait?: ReplicaWait): Promise<unknown> {
  let command: Arg[]
  try {
    command = evalArguments(script, input)
  } catch (error) {
    return Promise.reject(error)
  }
  // a script's first use on a connection sends its source: no NOSCRIPT round trip on a new server, and
  // a command sent behind it on the same connection (runTool's job add) runs after it, not before
  let sent = sentOn.get(redis)
  if (!sent) sentOn.set(redis, (sent = new Set()))
  if (!sent.has(script.name)) {
    sent.add(script.name)
    return send(redis, 'eval', script.lua, command, wait)
  }
  return send(redis, 'evalsha', script.sha, command, wait).catch((error: unknown) => {
    // a server that never saw the script (new, restarted, flushed): it gets the source once
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error
    return send(redis, 'eval', script.lua, command, wait)
  })
}

/** numkeys, KEYS and ARGV in the declaration's order; the key count is the declaration's (with its trailing keys). */
function evalArguments<S extends AnyScript>(script: S, { keys, args }: ScriptInput<S>): Arg[] {
  const named: Readonly<Record<string, unknown>> = keys
  const values: Readonly<Record<string, unknown>> = args
  const out: Arg[] = [0]
  for (const name of script.keys) out.push(mustBe(script, named[name], name))
  if (script.trailingKeys !== undefined) for (const key of listOf(script, named[script.trailingKeys])) out.push(key)
  out[0] = out.length - 1
  for (const name of script.args) out.push(mustBe(script, values[name], name))
  if (script.trailingArgs !== undefined) for (const value of listOf(script, values[script.trailingArgs])) out.push(value)
  return out
}

/** A missing value would shift every KEYS or ARGV after it: refused before anything is sent. */
function mustBe(script: AnyScript, value: unknown, name: string): Arg {
  if (typeof value === 'string' || typeof value === 'number') return value
  throw new Error(`Script ${script.name}: ${name} is ${typeof value}, not a string or number.`)
}

function listOf(script: AnyScript, value: unknown): readonly Arg[] {
  if (Array.isArray(value)) return value
  throw new Error(`Script ${script.name}: its trailing list is ${typeof value}, not an array.`)
}

/**
 * One EVALSHA or EVAL, as a plain command (never ioredis defineCommand: a command defined after an
 * auto-pipeline was opened is missing from it, which broke the whole pipeline with an uncaught
 * `results[i] is not iterable`, ioredis #1931; docs/decisions/log-connection.md). With `wait`, the script and a
 * `WAIT` go in one pipeline, so on a Cluster the WAIT reaches the master that ran the script; fewer
 * acknowledgements than asked throw (the caller retries: our writes are idempotent when re-sent).
 */
function send(redis: RedisClient, command: string, script: string, rest: Arg[], wait: ReplicaWait | undefined): Promise<unknown> {
  if (!wait) {
    // written at once, never corked until the tick's end: at concurrency 50 the cork batched a tick's
    // writes into one, but Redis then waited for the whole tick's Node work before it had any of them
    // (drain-50 +7% calls/s uncorked, 5% more CPU a call; docs/decisions/log-writes-uncorked.md)
    return redis.call(command, script, ...rest)
  }
  return sendWithWait(redis, command, script, rest, wait)
}

async function sendWithWait(redis: RedisClient, command: string, script: string, rest: Arg[], wait: ReplicaWait): Promise<unknown> {
  const pipeline = redis.pipeline()
  pipeline.call(command, script, ...rest)
  pipeline.call('WAIT', wait.replicas, wait.timeoutMs)
  const [ran, waited] = (await pipeline.exec()) ?? []
  if (!ran || !waited) throw new Error('the pipeline of a script and its WAIT answered nothing')
  if (ran[0]) throw ran[0]
  if (waited[0]) throw waited[0]
  if (Number(waited[1]) < wait.replicas)
    throw new Error(`${Number(waited[1])} of ${wait.replicas} replica(s) acknowledged the write within ${wait.timeoutMs} ms (WAIT)`)
  return ran[1]
}
