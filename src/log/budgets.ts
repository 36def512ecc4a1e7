import { z } from 'zod'
import { scripts, runScript } from './commands/index.js'
import { principalBudgetKey, sessionKeys } from './keys.js'
import type { BudgetScope, Harness, ResolvedBudget } from '../core/index.js'
import type { InputState } from './inputState.js'
import type { SessionLog } from './sessionLog.js'
import type { LogStream } from './stream.js'

/** The scope letter a budget hash's fields start with (reserveBudget.lua). */
type BudgetLetter = 's' | 't' | 'p'

/** One budget scope a model call try reserves in: the hash and the scope's letter in it. */
export interface BudgetHold {
  key: string
  scope: BudgetLetter
}

/** A spend in the units budgets count: nano-USD, tokens, model call tries. */
export interface BudgetAmount {
  cost: number
  tokens: number
  calls: number
}

/** A scope's figures: its ceilings (absent: none), what its settled tries spent and what tries in flight hold. */
export interface BudgetFigures {
  max: Partial<BudgetAmount>
  spent: BudgetAmount
  held: BudgetAmount
}

/** Why a reservation was refused: the metric whose ceiling it would pass, with the scope's figures then. */
export interface BudgetRefusal {
  /** What the turn does: the budget's own, else (a child of a tree) the root's stored one. */
  onExceeded: 'pause' | 'fail'
  metric: keyof BudgetAmount
  max: number
  spent: number
  held: number
  estimate: number
}

/**
 * A model call try's mark on its input (beginModelTry.lua): counted as 'cut' with `record` and
 * `counts` when the next try finds it still there; `holds` are the reservations it settles then.
 */
const tryMarkSchema = z.object({
  id: z.string(),
  record: z.string(),
  counts: z.string(),
  model: z.string(),
  // an empty list comes back from Lua's cjson as an object
  holds: z.union([z.array(z.tuple([z.string(), z.enum(['s', 't', 'p'])])), z.object({}).transform(() => [])]),
})
export type TryMark = z.infer<typeof tryMarkSchema>

const METRICS: ReadonlyArray<keyof BudgetAmount> = ['cost', 'tokens', 'calls']
const words = (amount: Partial<BudgetAmount>, none = '-') =>
  METRICS.map((m) => (amount[m] === undefined ? none : String(amount[m]))).join(' ')

/** The budget hash of a session, or of the fan-out tree it roots (the 't' fields of the same hash). */
export function sessionBudgetKey(stream: LogStream, sessionId: string): string {
  return sessionKeys(stream.prefix, sessionId, stream.shards).budget
}

/** The budget hash of `principal` of `harness` for the period that holds `now`. */
export function principalBudget(stream: LogStream, harness: string, principal: string, perMs: number, now = Date.now()) {
  const start = Math.floor(now / perMs) * perMs
  return { key: principalBudgetKey(stream.prefix, stream.shards, harness, principal, start), ttlMs: 2 * perMs }
}

/** Reserves `estimate` in one scope unless a ceiling would be passed (reserveBudget.lua); 'held': this try holds it already. */
export async function reserveBudget(
  stream: LogStream,
  hold: BudgetHold,
  tryId: string,
  estimate: BudgetAmount,
  options: {
    max?: Partial<BudgetAmount> | undefined
    onExceeded?: 'pause' | 'fail' | undefined
    storeMax?: boolean
    leaseMs: number
    ttlMs?: number
  },
): Promise<'ok' | 'held' | BudgetRefusal> {
  const reply = await stream.command('reserveBudget', () =>
    runScript(stream.redis, scripts.reserveBudget, {
      keys: { budget: hold.key },
      args: {
        scope: hold.scope,
        tryId,
        estimate: words(estimate, '0'),
        max: words(options.max ?? {}),
        storeMax: options.storeMax ? '1' : '',
        leaseMs: options.leaseMs,
        ttlMs: options.ttlMs === undefined ? '' : String(options.ttlMs),
        onExceeded: options.onExceeded ?? '',
      },
    }),
  )
  if (reply[0] !== 'over') return reply[0]
  const [, metric, max, spent, held, est, on] = reply
  return {
    onExceeded: on === 'fail' ? 'fail' : 'pause',
    metric: METRICS.find((m) => m === metric) ?? 'cost',
    max: Number(max),
    spent: Number(spent),
    held: Number(held),
    estimate: Number(est),
  }
}

/**
 * Settles a try's reservation with what it spent (settleBudget.lua); once per reservation. Nothing
 * spent releases it; 'reserved' counts it as spent at its reservation (a try cut by a crash).
 */
export async function settleBudget(stream: LogStream, hold: BudgetHold, tryId: string, actual: BudgetAmount | 'reserved'): Promise<void> {
  const spent = actual === 'reserved' ? '-' : words(actual, '0')
  await stream.command('settleBudget', () =>
    runScript(stream.redis, scripts.settleBudget, { keys: { budget: hold.key }, args: { scope: hold.scope, tryId, actual: spent } }),
  )
}

/** A scope's ceilings, spend and holds: one HGETALL. */
export async function readBudget(stream: LogStream, hold: BudgetHold): Promise<BudgetFigures> {
  const fields = await stream.command('readBudget', () => stream.redis.hgetall(hold.key))
  const figure = (kind: string, metric: string) => fields[`${hold.scope}/${kind}/${metric}`]
  const figures: BudgetFigures = { max: {}, spent: { cost: 0, tokens: 0, calls: 0 }, held: { cost: 0, tokens: 0, calls: 0 } }
  for (const metric of METRICS) {
    const max = figure('max', metric)
    if (max !== undefined) figures.max[metric] = Number(max)
    figures.spent[metric] = Number(figure('spent', metric) ?? 0)
    figures.held[metric] = Number(figure('held', metric) ?? 0)
  }
  return figures
}

/**
 * Marks a try as begun on its input (no mark: only counts a cut one); returns the mark of a try it
 * found still there (cut: counted now), whose reservations the caller settles. 'settled': the turn
 * is over, no try begins.
 */
export async function markModelTry(
  stream: LogStream,
  inputId: string,
  mark: TryMark | undefined,
  usageDay: string,
): Promise<TryMark | undefined | 'settled'> {
  const reply = await stream.script(scripts.beginModelTry, {
    keys: { ...stream.scriptKeys, usageDay },
    args: { inputId, try: mark ? JSON.stringify(mark) : '' },
  })
  if (reply[0] === 'settled') return 'settled'
  if (reply[0] !== 'ok' || !reply[1]) return undefined
  return tryMarkSchema.parse(JSON.parse(reply[1]))
}

/** A budget scope of a turn: where its counters are and the ceilings it checks (none: counted only). */
export interface TurnBudget {
  scope: BudgetScope
  hold: BudgetHold
  budget?: ResolvedBudget
  storeMax?: boolean
  ttlMs?: number
  principal?: string
}

/**
 * The budget scopes of a turn's model calls (docs/spend.md, "Budgets"): its session's, its tree's
 * (a child agent's turn always counts in its root's, under the root's stored ceilings unless its own
 * harness sets some), and its principal's for the period now.
 */
export function turnBudgets(harness: Harness, log: SessionLog, input: InputState | null): TurnBudget[] {
  const scopes = harness.budgets?.scopes ?? {}
  const { stream } = log
  const budgets: TurnBudget[] = []
  if (scopes.session) budgets.push({ scope: 'session', hold: { key: stream.keys.budget, scope: 's' }, budget: scopes.session })
  const root = input?.parent?.tree?.sessionId
  if (scopes.tree || root !== undefined) {
    const key = root === undefined ? stream.keys.budget : sessionBudgetKey(stream, root)
    budgets.push({
      scope: 'tree',
      hold: { key, scope: 't' },
      ...(scopes.tree ? { budget: scopes.tree } : {}),
      storeMax: root === undefined,
    })
  }
  if (scopes.principal?.perMs && input?.principal !== undefined) {
    const { key, ttlMs } = principalBudget(stream, harness.name, input.principal, scopes.principal.perMs)
    budgets.push({ scope: 'principal', hold: { key, scope: 'p' }, budget: scopes.principal, ttlMs, principal: input.principal })
  }
  return budgets
}

/** One budget of a turn as a tool reads it (`ctx.budget()`): ceilings, spent, held by calls in flight and what is left; cost in USD. */
export interface BudgetLeft {
  scope: BudgetScope
  max: Partial<BudgetAmount>
  spent: BudgetAmount
  held: BudgetAmount
  remaining: Partial<BudgetAmount>
}

/** The budgets of a turn (or of a runTool call's session: `input` null) and what is left of each, one read a scope. */
export async function budgetsLeft(harness: Harness, log: SessionLog, input: InputState | null): Promise<BudgetLeft[]> {
  const usd = (amount: Partial<BudgetAmount>) => (amount.cost === undefined ? amount : { ...amount, cost: amount.cost / 1e9 })
  const left: BudgetLeft[] = []
  for (const { scope, hold, budget } of turnBudgets(harness, log, input)) {
    const figures = await readBudget(log.stream, hold)
    const max = { ...figures.max, ...budget?.max }
    const remaining: Partial<BudgetAmount> = {}
    for (const metric of METRICS) {
      const ceiling = max[metric]
      if (ceiling !== undefined) remaining[metric] = Math.max(0, ceiling - figures.spent[metric] - figures.held[metric])
    }
    if (Object.keys(max).length === 0) continue
    left.push({
      scope,
      max: usd(max),
      spent: { ...figures.spent, cost: figures.spent.cost / 1e9 },
      held: { ...figures.held, cost: figures.held.cost / 1e9 },
      remaining: usd(remaining),
    })
  }
  return left
}
