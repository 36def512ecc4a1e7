import { ConfigError, InvalidDurationError } from '../errors/index.js'
import { DEFAULT_SUBAGENT_LIMITS, type HarnessLimits, type Limit, type ResolvedLimit, type SubagentLimits } from '../core/index.js'
import { parseDuration } from '../tool/index.js'

/** BullMQ's priority range: 1 (runs first) to 2^21. */
const MAX_PRIORITY = 2 ** 21

/** Checks a priority (a prompt's or a harness's default): an integer from 1 (first) to 2^21. */
export function checkPriority(priority: unknown, where: string): number {
  // typeof narrows what Number.isInteger already checks (it is false for anything not a number)
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < 1 || priority > MAX_PRIORITY)
    throw new ConfigError(`${where}: priority must be an integer from 1 (runs first) to ${MAX_PRIORITY}, got ${JSON.stringify(priority)}.`)
  return priority
}

function resolveLimit(limit: Limit, scope: string, where: string): ResolvedLimit {
  if (typeof limit !== 'object' || limit === null) throw new ConfigError(`${where} must be an object { concurrency?, rate?, key? }.`)
  const { concurrency, rate, key } = limit
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency > 0))
    throw new ConfigError(`${where}.concurrency must be a positive integer, got ${JSON.stringify(concurrency)}.`)
  if (concurrency === undefined && rate === undefined)
    throw new ConfigError(`${where} sets neither concurrency nor rate: give one (or remove the limit).`)
  let perMs = 0
  if (rate !== undefined) {
    if (!(Number.isInteger(rate?.limit) && rate.limit > 0))
      throw new ConfigError(`${where}.rate.limit must be a positive integer (starts per rate.per), got ${JSON.stringify(rate?.limit)}.`)
    try {
      perMs = parseDuration(rate.per)
    } catch (error) {
      if (!(error instanceof InvalidDurationError)) throw error
      throw new ConfigError(`${where}.rate.per must be a duration such as 1000, '1s' or '1m': ${error.message}`)
    }
    if (perMs <= 0) throw new ConfigError(`${where}.rate.per must be longer than 0 ms.`)
  }
  if (key !== undefined && typeof key !== 'function')
    throw new ConfigError(`${where}.key must be a function (input, { sessionId, context }) => string.`)
  return { scope, concurrency: concurrency ?? 0, rateLimit: rate?.limit ?? 0, perMs, ...(key ? { key } : {}) }
}

/** `defineHarness({ limits })`, checked: a limit of a tool the harness does not have is refused. */
export function resolveLimits(
  harness: string,
  limits: HarnessLimits | undefined,
  toolNames: ReadonlySet<string>,
): { tools: Map<string, ResolvedLimit>; turns?: ResolvedLimit } | undefined {
  if (limits === undefined) return undefined
  const where = `defineHarness "${harness}": limits`
  if (typeof limits !== 'object' || limits === null) throw new ConfigError(`${where} must be an object { tools?, turns? }.`)
  const tools = new Map<string, ResolvedLimit>()
  for (const [name, limit] of Object.entries(limits.tools ?? {})) {
    if (!toolNames.has(name))
      throw new ConfigError(
        `${where}.tools names "${name}", which is not a tool of the harness (tools: ${[...toolNames].join(', ') || 'none'}).`,
      )
    tools.set(name, resolveLimit(limit, `tool:${name}`, `${where}.tools["${name}"]`))
  }
  const turns = limits.turns === undefined ? undefined : resolveLimit(limits.turns, 'turns', `${where}.turns`)
  return { tools, ...(turns ? { turns } : {}) }
}

/** `defineHarness({ subagents })`, checked, its defaults filled in (docs/fan-out.md). */
export function resolveSubagents(harness: string, subagents: { limits?: SubagentLimits } | undefined): Required<SubagentLimits> {
  const where = `defineHarness "${harness}": subagents`
  if (subagents === undefined) return DEFAULT_SUBAGENT_LIMITS
  if (typeof subagents !== 'object' || subagents === null) throw new ConfigError(`${where} must be an object { limits? }.`)
  const limits = subagents.limits ?? {}
  if (typeof limits !== 'object' || limits === null)
    throw new ConfigError(`${where}.limits must be an object { maxDepth?, maxConcurrent?, maxCalls?, timeoutMs? }.`)
  const out = { ...DEFAULT_SUBAGENT_LIMITS }
  for (const key of ['maxDepth', 'maxConcurrent', 'maxCalls', 'timeoutMs'] as const) {
    const value = limits[key]
    if (value === undefined) continue
    if (!Number.isInteger(value) || value < 1)
      throw new ConfigError(`${where}.limits.${key} must be a positive integer, got ${JSON.stringify(value)}.`)
    out[key] = value
  }
  return out
}
