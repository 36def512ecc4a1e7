// Spend (docs/spend.md, R25): usage as the provider reported it on each model call's record, its cost
// (the provider's, else the harness's pricing), and the session's totals kept in the same write: one
// Redis command to read, whatever the log holds.
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineHarness } from '../../src/index.js'
import { createDashboard } from '../../src/dashboard/index.js'
import { ConfigError } from '../../src/errors/index.js'
import { defaultShards } from '../../src/log/index.js'
import { sessionKeys } from '../../src/log/keys.js'
import { scriptedModel } from '../../src/testing/index.js'
import { useInProcessHosts } from '../helpers/hosts.js'
import { monitorCommands as watchCommands } from '../helpers/monitor.js'
import { records, until } from '../helpers/log.js'
import { rigClient } from '../rig.js'

const echo = toolDefinition({ name: 'echo', description: 'Echo', inputSchema: z.object({}) }).server(() => 'echoed')
const pricing = { 'gpt-test': { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 0.5 } }

describe('spend', () => {
  const hosts = useInProcessHosts()

  /** The command lines naming `prefix` that clients send from now on (MONITOR). */
  const monitorCommands = (prefix: string) => watchCommands(hosts.url(), prefix, (close) => hosts.defer(close))

  it('R25 each model call record keeps the cache and reasoning counts, the model and the cost: the provider cost, else priced by `pricing`', async () => {
    const harness = defineHarness({
      name: 'priced',
      adapter: scriptedModel(
        [
          {
            toolCalls: [{ name: 'echo', input: {} }],
            usage: {
              promptTokens: 1_000,
              completionTokens: 100,
              totalTokens: 1_100,
              promptTokensDetails: { cachedTokens: 400, cacheWriteTokens: 50 },
              completionTokensDetails: { reasoningTokens: 30 },
            },
          },
          { text: 'done', usage: { promptTokens: 1_200, completionTokens: 10, totalTokens: 1_210, cost: 0.0125 } },
        ],
        { model: 'gpt-test' },
      ),
      tools: [echo],
      pricing,
    })
    const { host } = hosts.start(harness, 'spend-priced')
    const session = host.open(harness, { sessionId: 'priced' })
    const { inputId } = await session.prompt('go', { principal: 'alice' })
    expect((await session.settled(inputId)).outcome).toBe('completed')
    const usages = records(await session.log.read(), 'harness.model.response').map((r) => r.usage)
    // 600 input at $2, 400 cached at $0.50, 100 output at $8, per million
    const priced = (600 * 2 + 400 * 0.5 + 100 * 8) / 1e6
    expect(usages).toEqual([
      {
        promptTokens: 1_000,
        completionTokens: 100,
        totalTokens: 1_100,
        cachedTokens: 400,
        cacheWriteTokens: 50,
        reasoningTokens: 30,
        model: 'gpt-test',
        cost: priced,
        costFrom: 'pricing',
      },
      { promptTokens: 1_200, completionTokens: 10, totalTokens: 1_210, model: 'gpt-test', cost: 0.0125, costFrom: 'provider' },
    ])
    const figures = {
      calls: 2,
      promptTokens: 2_200,
      completionTokens: 110,
      totalTokens: 2_310,
      cachedTokens: 400,
      cacheWriteTokens: 50,
      reasoningTokens: 30,
      // summed in nano-USD: exact
      cost: 0.0147,
      estimatedCalls: 0,
    }
    expect(await session.usage()).toEqual({
      total: figures,
      byModel: { 'gpt-test': figures },
      byPrincipal: { alice: figures },
      turns: { [inputId]: figures },
    })
    // the harness's day hashes: by day, model and principal, narrowed by the filter
    const today = new Date().toISOString().slice(0, 10)
    expect(await host.usage({ principal: 'alice' })).toEqual({
      total: figures,
      byDay: { [today]: figures },
      byModel: { 'gpt-test': figures },
      byPrincipal: { alice: figures },
    })
    expect((await host.usage({ principal: 'nobody' })).total.calls).toBe(0)
    expect((await host.usage({ model: 'gpt-test', harness: 'priced', since: Date.now() - 60_000 })).total).toEqual(figures)
    await expect(host.usage({ since: Date.now(), until: Date.now() - 3 * 86_400_000 })).rejects.toThrow(/since must be before until/)
  })

  it("R25 the dashboard's usage page shows host.usage by model, principal and day, to operators only, a caller's principal escaped", async () => {
    const harness = defineHarness({
      name: 'spend-page',
      adapter: scriptedModel([{ text: 'hi', usage: { promptTokens: 1_000, completionTokens: 10, totalTokens: 1_010 } }], {
        model: 'gpt-test',
      }),
      pricing,
    })
    const { host } = hosts.start(harness, 'spend-page')
    const session = host.open(harness, { sessionId: 'page' })
    await session.settled((await session.prompt('go', { principal: '<b>x</b>' })).inputId)
    const dashboard = createDashboard({
      host,
      authorize: (r) => (r.headers.get('x-user') ? { user: r.headers.get('x-user')! } : null),
      canOperate: (p) => p.user === 'ops',
    })
    // no principal: 401, and an authorized non-operator: 403; neither sees a figure
    for (const [headers, status] of [
      [{}, 401],
      [{ 'x-user': 'alice' }, 403],
    ] as const) {
      const refused = await dashboard.request('/usage', { headers })
      expect(refused.status).toBe(status)
      expect(await refused.text()).not.toContain('gpt-test')
    }
    const page = await (await dashboard.request('/usage', { headers: { 'x-user': 'ops' } })).text()
    for (const shown of ['gpt-test', '&lt;b&gt;x&lt;/b&gt;', new Date().toISOString().slice(0, 10), '1,000', '0.0021'])
      expect(page).toContain(shown)
    expect(page).not.toContain('<b>x</b>')
  })

  it('R25 defineHarness refuses a pricing it cannot price with: a clear ConfigError naming the model and the field', () => {
    const bad = () =>
      defineHarness({ name: 'badPrice', adapter: scriptedModel([]), pricing: { m: { inputPerMTok: -1, outputPerMTok: 1 } } })
    expect(bad).toThrow(ConfigError)
    expect(bad).toThrow(/pricing\["m"\]\.inputPerMTok must be a number ≥ 0/)
  })

  it('R25 session.usage() reads one Redis command, at 10 log entries and at 10,000; a hostile principal or model name keys one group', async () => {
    const names = ['a/b/c', '__proto__', 't//']
    const harness = defineHarness({
      name: 'o1',
      adapter: scriptedModel(
        [{ text: 'one', usage: { promptTokens: 5, completionTokens: 1, totalTokens: 6 } }].concat(
          Array.from({ length: 3 }, () => ({ text: 'more', usage: { promptTokens: 5, completionTokens: 1, totalTokens: 6 } })),
        ),
        { model: 'm/x/' },
      ),
    })
    const { host, prefix } = hosts.start(harness, 'spend-o1')
    const session = host.open(harness, { sessionId: 'o1' })
    for (const principal of names) {
      const { inputId } = await session.prompt(`hi ${principal}`, { principal })
      await session.settled(inputId)
    }
    const client = rigClient(hosts.url())
    hosts.defer(() => client.quit())
    const logKey = sessionKeys(prefix, 'o1', defaultShards()).log
    const before = await session.usage()
    expect(before.total).toMatchObject({ calls: 3, promptTokens: 15 })
    expect(Object.keys(before.byPrincipal).sort()).toEqual([...names].sort())
    expect(before.byPrincipal['a/b/c']).toMatchObject({ calls: 1, promptTokens: 5 })
    expect(Object.keys(before.byModel)).toEqual(['m/x/'])
    const countAt = async (entries: number) => {
      while ((await client.xlen(logKey)) < entries) {
        const pipeline = client.pipeline()
        for (let i = 0; i < 1000 && i < entries; i++) pipeline.xadd(logKey, '*', 'r', JSON.stringify({ type: 'app.note', n: i }))
        await pipeline.exec()
      }
      const sent = await monitorCommands(prefix)
      const usage = await session.usage()
      // MONITOR shows a command after it ran: the read is done, its line may still be on the way
      await until(async () => sent.length > 0, 'the read on MONITOR')
      await new Promise((resolve) => setTimeout(resolve, 100))
      return { sent: sent.map(({ line }) => line), usage, entries: await client.xlen(logKey) }
    }
    const small = await countAt(10)
    const large = await countAt(10_000)
    expect(small.entries).toBeLessThan(20)
    expect(large.entries).toBeGreaterThanOrEqual(10_000)
    expect(small.sent).toEqual([expect.stringMatching(/^"hgetall" ".*:o1:usage"$/)])
    expect(large.sent).toEqual(small.sent)
    expect(large.usage).toEqual(before)
  })

  it('R25 a session from before the totals is summed from its log once, then read in one command again', async () => {
    const harness = defineHarness({
      name: 'older',
      adapter: scriptedModel([
        { toolCalls: [{ name: 'echo', input: {} }], usage: { promptTokens: 11, completionTokens: 3, totalTokens: 14 } },
        { text: 'first', usage: { promptTokens: 20, completionTokens: 2, totalTokens: 22 } },
      ]),
      tools: [echo],
    })
    const { host, prefix } = hosts.start(harness, 'spend-older')
    const session = host.open(harness, { sessionId: 'older' })
    const { inputId } = await session.prompt('one', { principal: 'bob' })
    await session.settled(inputId)
    const whole = await session.usage()
    const client = rigClient(hosts.url())
    hosts.defer(() => client.quit())
    // as a session logged before the totals existed: no totals hash
    await client.del(sessionKeys(prefix, 'older', defaultShards()).usage)
    const sent = await monitorCommands(prefix)
    expect(await session.usage()).toEqual(whole)
    expect(whole.total).toMatchObject({ calls: 2, promptTokens: 31, completionTokens: 5, totalTokens: 36 })
    expect(whole.byPrincipal).toEqual({ bob: whole.total })
    // the log read once, then the seeding write (seedUsage.lua), before the next read
    await until(async () => sent.some(({ line }) => line.startsWith('"xrange"')), 'the log read on MONITOR')
    await until(async () => sent.some(({ line }) => /^"eval(sha)?" /.test(line) && line.includes(':older:usage')), 'the seeding on MONITOR')
    sent.length = 0
    expect(await session.usage()).toEqual(whole)
    await until(async () => sent.length > 0, 'the read on MONITOR')
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(sent.map(({ line }) => line)).toEqual([expect.stringMatching(/^"hgetall" /)])
  })

  it('R25 a failed model call try counts: each retry try once, estimated from the prompt when the provider reported nothing, and priced; a refused one (an HTTP error status) is not billed', async () => {
    let tries = 0
    const harness = defineHarness({
      name: 'outage',
      adapter: scriptedModel(
        [
          () => {
            tries++
            // a connection lost while the request was out (billed or not: estimated), then a 503 (not billed)
            if (tries <= 2) throw new Error('socket hang up')
            if (tries === 3) throw new Error('503 service unavailable')
            return { text: 'back', usage: { promptTokens: 40, completionTokens: 4, totalTokens: 44 } }
          },
        ],
        { model: 'gpt-test' },
      ),
      pricing,
      turn: { onModelError: ({ retries }) => (retries < 5 ? { action: 'retry', delayMs: 0 } : { action: 'fail' }) },
    })
    const { host } = hosts.start(harness, 'spend-outage')
    const session = host.open(harness, { sessionId: 'outage' })
    const { inputId } = await session.prompt('are you there?', { principal: 'carol' })
    expect((await session.settled(inputId)).outcome).toBe('completed')
    const entries = await session.log.read()
    const counted = records(entries, 'harness.usage')
    expect(counted.map((r) => r.reason)).toEqual(['failed', 'failed', 'refused'])
    const failed = counted.slice(0, 2)
    for (const record of failed) {
      expect(record).toMatchObject({
        inputId,
        reason: 'failed',
        usage: { model: 'gpt-test', completionTokens: 0, estimated: true, costFrom: 'pricing' },
      })
      expect(record.usage.promptTokens).toBeGreaterThan(0)
    }
    expect(counted[2]!.usage).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0, cost: 0 })
    const estimated = failed.reduce((n, r) => n + r.usage.promptTokens, 0)
    const usage = await session.usage()
    expect(usage.total).toMatchObject({ calls: 3, estimatedCalls: 2, promptTokens: 40 + estimated, completionTokens: 4 })
    // priced per token in nano-USD: $2 per million input, $8 per million output
    expect(usage.total.cost).toBe(((40 + estimated) * 2_000 + 4 * 8_000) / 1e9)
    expect(usage.byPrincipal.carol).toEqual(usage.total)
    expect(usage.turns[inputId]).toEqual(usage.total)
  })
})
