// Followers share Redis connections (src/log/sharedReader.ts): 100 followers of 50 sessions
// (session.events() and session.log.follow() on each) hold a bounded number of connections of a
// private redis-server (counted with CLIENT LIST), each gets its own session's events, an abort ends
// one follower and closes nothing the others use, and a Redis SIGKILL and restart only delays them.
// On the suite's Redis (a 3-master Cluster with DH_SHARDS=3 under test:cluster), followers of sessions
// in every shard share readers grouped by hash tag, and each still gets its events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarnessHost, defineHarness, type HarnessHost, type Session } from '../../src/index.js'
import { isRecord, type RedisClient } from '../../src/log/index.js'
import { scriptedModel } from '../../src/testing/index.js'
import type { RedisServerHandle } from '../../src/testing/redisServer.js'
import { quiet } from '../helpers/hosts.js'
import { cleanupPrefix, getRedisUrl, rigClient, startPrivateRedis, uniquePrefix } from '../rig.js'

// no workers: a prompt logs its input (RUN_STARTED, a harness.input record) and nothing runs it
const harness = defineHarness({ name: 'followed', adapter: scriptedModel([]), tools: [] })
const SESSIONS = 50

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 20))
}

describe('followers share Redis connections', () => {
  let server: RedisServerHandle
  let host: HarnessHost
  let admin: RedisClient

  beforeAll(async () => {
    server = await startPrivateRedis()
    host = createHarnessHost({ redis: server.url, harnesses: [harness], prefix: uniquePrefix('followers'), logger: quiet })
    admin = rigClient(server.url, { maxRetriesPerRequest: null })
    admin.on('error', () => {}) // the restart below is expected
  })
  afterAll(async () => {
    await host?.close()
    admin?.disconnect()
    await server?.stop()
  })

  /** The host's and the admin client's connections, without any reader. */
  let hostConnections = 0
  const connections = async () => ((await admin.client('LIST')) as string).trim().split('\n').length
  const blockedClients = async () => Number(/blocked_clients:(\d+)/.exec(await admin.info('clients'))?.[1] ?? 0)

  it('100 followers of 50 sessions use a bounded number of connections, each gets its own events; an abort closes nothing shared; a Redis restart only delays them', async () => {
    // the host's own connections, in use: a prompt, a read
    const warm = host.open(harness, { sessionId: 'warm' })
    await warm.prompt('warm')
    await warm.log.read()
    const baseline = await connections()
    hostConnections = baseline

    const sessions: Session[] = Array.from({ length: SESSIONS }, (_, i) => host.open(harness, { sessionId: `f${i}` }))
    const controllers = sessions.map(() => new AbortController())
    const seen = sessions.map(() => ({ events: [] as string[], log: [] as string[] }))
    const followers = sessions.flatMap((session, i) => [
      (async () => {
        for await (const { event } of session.events({ signal: controllers[i]!.signal }))
          if (event.type === 'RUN_STARTED') seen[i]!.events.push(event.runId)
      })(),
      (async () => {
        for await (const entry of session.log.follow({ signal: controllers[i]!.signal }))
          if (isRecord(entry, 'harness.input')) seen[i]!.log.push(entry.record.text)
      })(),
    ])
    // they wait before anything is written: a blocked XREAD holds their streams
    await until(async () => (await blockedClients()) >= 1)

    const round = async (n: number, live: number[]) => {
      const inputs = await Promise.all(sessions.map((s, i) => s.prompt(`${n} to f${i}`)))
      await until(() => live.every((i) => seen[i]!.events.length === n && seen[i]!.log.length === n))
      for (const i of live) {
        expect(seen[i]!.events.at(-1)).toBe(inputs[i]!.inputId)
        expect(seen[i]!.log.at(-1)).toBe(`${n} to f${i}`)
      }
    }
    const all = sessions.map((_, i) => i)
    await round(1, all)
    // one shared reader for all 100 on one Redis, not a connection each
    expect(await connections()).toBeLessThanOrEqual(baseline + 1)

    // half of them end: theirs return, the others go on, on the same connections
    const ended = all.filter((i) => i % 2 === 0)
    const left = all.filter((i) => i % 2 === 1)
    for (const i of ended) controllers[i]!.abort()
    await Promise.all(ended.flatMap((i) => [followers[2 * i], followers[2 * i + 1]]))
    await round(2, left)
    for (const i of ended) expect(seen[i]).toEqual({ events: [expect.any(String)], log: [`1 to f${i}`] })
    const before = await connections()
    expect(before).toBeLessThanOrEqual(baseline + 1)

    // Redis dies and comes back: the followers' reads and the shared reader reconnect
    await server.kill()
    await server.restart()
    await round(3, left)
    expect(await connections()).toBeLessThanOrEqual(before)

    for (const c of controllers) c.abort()
    await Promise.all(followers)
  })

  it('past 256 streams a reader is full and a second one takes the rest: 300 log followers hold 2 connections and each gets its entry', async () => {
    const sessions = Array.from({ length: 300 }, (_, i) => host.open(harness, { sessionId: `many${i}` }))
    const controller = new AbortController()
    const seen = sessions.map(() => [] as string[])
    const followers = sessions.map(async (session, i) => {
      for await (const entry of session.log.follow({ signal: controller.signal }))
        if (isRecord(entry, 'harness.input')) seen[i]!.push(entry.record.text)
    })
    // the first test's reader (idle, not yet closed) takes 256 of them, one more reader the rest
    await until(async () => (await blockedClients()) >= 2)
    // CLIENT LIST can trail the blocked count by a moment: the count is waited for, then held to
    await until(async () => (await connections()) === hostConnections + 2)
    expect(await connections()).toBe(hostConnections + 2)
    await Promise.all(sessions.map((s, i) => s.prompt(`to many${i}`)))
    await until(() => seen.every((s) => s.length === 1))
    expect(seen).toEqual(sessions.map((_, i) => [`to many${i}`]))
    expect(await connections()).toBe(hostConnections + 2)
    controller.abort()
    await Promise.all(followers)
  })
})

describe("followers on the suite's Redis (a Cluster under test:cluster)", () => {
  let url: string
  let host: HarnessHost
  const prefix = uniquePrefix('followers-shards')

  beforeAll(async () => {
    url = await getRedisUrl()
    host = createHarnessHost({ redis: url, harnesses: [harness], prefix, logger: quiet })
  })
  afterAll(async () => {
    await host?.close()
    if (url) await cleanupPrefix(url, prefix)
  })

  it('followers of sessions in every shard wait on readers grouped by hash tag, and each gets its own events in order', async () => {
    const sessions = Array.from({ length: 30 }, (_, i) => host.open(harness, { sessionId: `s${i}` }))
    const controller = new AbortController()
    const seen = sessions.map(() => [] as string[])
    const followers = sessions.map(async (session, i) => {
      for await (const { event } of session.events({ signal: controller.signal }))
        if (event.type === 'RUN_STARTED') seen[i]!.push(event.runId)
    })
    const first = await Promise.all(sessions.map((s) => s.prompt('one')))
    await until(() => seen.every((s) => s.length === 1))
    const second = await Promise.all(sessions.map((s) => s.prompt('two')))
    await until(() => seen.every((s) => s.length === 2))
    expect(seen).toEqual(sessions.map((_, i) => [first[i]!.inputId, second[i]!.inputId]))
    controller.abort()
    await Promise.all(followers)
  })
})
