import type { PayloadCodec } from '../codec/index.js'
import { createRedisClient, type RedisConnection } from '../harness/connection.js'
import type { Harness } from '../core/index.js'
import { contextOf, defaultShards, OpenWork, SessionLog, storedOpenCalls, type RedisClient } from '../log/index.js'
import { checkCall, type DeployProblem } from './checkCall.js'

/** What a deploy check found: how much open work it looked at, and every problem, by session and call. */
export interface DeployReport {
  sessions: number
  calls: number
  problems: DeployProblem[]
}

/** Where the live work is: a Redis (a URL, ioredis options or a client), the host's key prefix and shard count. */
export interface StorageOptions {
  redis: RedisConnection | RedisClient
  /** The host's key prefix (default 'dh'). */
  prefix?: string
  /** The deployment's shard count (default DH_SHARDS, else 1). */
  shards?: number
  /** The host's codec, to open what its sessions sealed (docs/encryption.md). */
  codec?: PayloadCodec
}

/** The harness of a call: its owner's (the turn's harness, kept with the call), else the one harness that has its tool. */
function harnessOf(harnesses: readonly Harness[], owner: string | undefined, tool: string): Harness | undefined {
  if (owner !== undefined) return harnesses.find((h) => h.name === owner)
  return harnesses.length === 1 ? harnesses[0] : harnesses.find((h) => h.tools.some((t) => t.name === tool))
}

/**
 * Checks one session's open work against the new harnesses: each call not landed (queued, running or
 * parked) by checkCall, each open turn's harness by name. Reads the session's log, calls and steps.
 */
export async function checkSession(
  log: SessionLog,
  harnesses: readonly Harness[],
  openInputs: readonly string[] = [],
): Promise<DeployReport> {
  const problems: DeployProblem[] = []
  // a queued or running turn: the new module must have its harness to run it at all
  for (const inputId of openInputs) {
    const input = await log.inputs.getInput(inputId)
    if (input && input.status === 'open' && !harnesses.some((h) => h.name === input.harness))
      problems.push({
        code: 'unknown_harness',
        sessionId: log.sessionId,
        message: `turn ${inputId} is of harness "${input.harness}", which is not in the new module: nothing would run it`,
      })
  }
  const calls = await storedOpenCalls(log)
  for (const stored of calls) {
    const logged = await log.findLoggedCall(stored.toolCallId, stored.state?.owner?.inputId)
    if (!logged) continue
    const inputId = stored.state?.owner?.inputId ?? logged.inputId
    const input = inputId ? await log.inputs.getInput(inputId) : null
    if (input?.status === 'settled') continue // an aborted turn's call: it lands cancelled, whatever the code
    const owner = stored.state?.owner?.harness ?? input?.harness
    const harness = harnessOf(harnesses, owner, logged.name)
    if (!harness) {
      const message = `harness "${owner ?? '?'}" is not in the new module: nothing would run this call`
      problems.push({ code: 'unknown_harness', sessionId: log.sessionId, toolCallId: stored.toolCallId, tool: logged.name, message })
      continue
    }
    const context = contextOf(input)
    problems.push(...(await checkCall(log, harness, { ...stored, ...logged, ...(context === undefined ? {} : { context }) })))
  }
  return { sessions: 1, calls: calls.length, problems }
}

function clientOf(redis: StorageOptions['redis']): { client: RedisClient; owned: boolean } {
  if (typeof redis === 'object' && redis !== null && 'hgetall' in redis) return { client: redis, owned: false }
  return { client: createRedisClient(redis), owned: true }
}

/** Runs `fn` on a client of `options.redis`, closed after when it was made here. */
export async function withStorage<T>(options: StorageOptions, fn: (client: RedisClient) => Promise<T>): Promise<T> {
  const { client, owned } = clientOf(options.redis)
  try {
    return await fn(client)
  } finally {
    if (owned) client.disconnect()
  }
}

/**
 * `harness check-deploy`: every session with open work (a call begun and not landed, an open turn or
 * question, from the open-work indexes: O(open work)) checked against the new harnesses.
 */
export async function checkDeploy(options: StorageOptions & { harnesses: readonly Harness[] }): Promise<DeployReport> {
  const prefix = options.prefix ?? 'dh'
  const shards = options.shards ?? defaultShards()
  return withStorage(options, async (client) => {
    const work = new OpenWork(client, prefix, shards)
    const sessions = new Map<string, string[]>()
    for (const index of ['openCalls', 'openTurns', 'openQuestions'] as const)
      for (const item of await work.olderThan(index, Date.now() + 365 * 86_400_000, 100_000)) {
        const inputs = sessions.get(item.sessionId) ?? []
        if (index === 'openTurns') inputs.push(item.id)
        sessions.set(item.sessionId, inputs)
      }
    const report: DeployReport = { sessions: 0, calls: 0, problems: [] }
    for (const [sessionId, inputs] of [...sessions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const checked = await checkSession(
        new SessionLog(client, prefix, sessionId, { shards, ...(options.codec ? { codec: options.codec } : {}) }),
        options.harnesses,
        inputs,
      )
      report.sessions += 1
      report.calls += checked.calls
      report.problems.push(...checked.problems)
    }
    return report
  })
}
