import { scripts } from './commands/index.js'
import { isRecord, type LogStream } from './stream.js'
import { compareIds } from './sharedReader.js'
import { groupsOf, usageCounts, USAGE_METRICS, type UsageGroups } from './usageTotals.js'
import type { ModelUsage } from './usageRecord.js'

/** Tries to seed an older session's totals before returning the sums unsaved (the log kept moving). */
const SEED_TRIES = 3

/**
 * The spend of a session by group (docs/spend.md): one HGETALL of its totals hash, written with each
 * model call try's record. A session from before the totals (its hash is not marked whole) is summed
 * from its log once, and the sums are written (seedUsage.lua): later reads are one command again.
 */
export async function readSessionUsage(stream: LogStream): Promise<UsageGroups> {
  const fields = await stream.command('usage', () => stream.redis.hgetall(stream.keys.usage))
  if (fields['x/v/'] !== undefined) return groupsOf(fields)
  let summed: Record<string, string> = {}
  for (let tries = 0; tries < SEED_TRIES; tries++) {
    const [last] = await stream.command('usage', () => stream.redis.xrevrange(stream.keys.log, '+', '-', 'COUNT', 1))
    const lastId = last?.[0] ?? ''
    summed = await sumLog(stream, lastId)
    const [status] = await stream.script(scripts.seedUsage, {
      keys: stream.scriptKeys,
      args: { lastId, fieldsAndValues: Object.entries(summed).flat() },
    })
    if (status === 'ok') break
    if (status === 'whole') return groupsOf(await stream.command('usage', () => stream.redis.hgetall(stream.keys.usage)))
  }
  return groupsOf(summed)
}

/** The totals fields of a log up to `lastId`, as includes/usage.lua counts them. */
async function sumLog(stream: LogStream, lastId: string): Promise<Record<string, string>> {
  const sums = new Map<string, number>()
  const principals = new Map<string, string>()
  const count = (usage: ModelUsage | undefined, calls: number, inputId: string, principal = principals.get(inputId) ?? '') => {
    const values = usageCounts(usage, calls).split(' ')
    const scopes: Array<[string, string]> = [['t', '']]
    if (usage?.model) scopes.push(['m', usage.model])
    if (principal) scopes.push(['p', principal])
    if (inputId) scopes.push(['i', inputId])
    USAGE_METRICS.forEach((metric, k) => {
      const value = Number(values[k])
      if (value === 0) return
      for (const [scope, name] of scopes) sums.set(`${scope}/${metric}/${name}`, (sums.get(`${scope}/${metric}/${name}`) ?? 0) + value)
    })
  }
  if (!lastId) return {}
  const types = ['harness.input', 'harness.model.response', 'harness.compaction', 'harness.usage'] as const
  for (const entry of await stream.read({ types })) {
    if (compareIds(entry.id, lastId) > 0) break
    if (isRecord(entry, 'harness.input')) {
      if (entry.record.principal) principals.set(entry.record.inputId, entry.record.principal)
    } else if (isRecord(entry, 'harness.model.response') || isRecord(entry, 'harness.usage')) {
      count(entry.record.usage, 1, entry.record.inputId)
    } else if (isRecord(entry, 'harness.compaction') && entry.record.usage) {
      // an older compaction record does not say how many summary calls it made: one
      count(entry.record.usage, 1, entry.record.inputId ?? '', entry.record.principal)
    }
  }
  return Object.fromEntries([...sums].map(([field, value]) => [field, String(value)]))
}

/**
 * A settled child agent's spend (its session's totals) joins its tree's total at the root session,
 * once whatever reruns the call that rolls it up (rollUpUsage.lua's marker).
 */
export async function rollUpUsage(child: LogStream, root: LogStream): Promise<void> {
  const fields = await child.command('usage', () => child.redis.hgetall(child.keys.usage))
  const metricsAndValues = USAGE_METRICS.flatMap((metric) => [metric, fields[`t/${metric}/`] ?? '0'])
  await root.script(scripts.rollUpUsage, { keys: { usage: root.keys.usage }, args: { child: child.sessionId, metricsAndValues } }, true)
}
