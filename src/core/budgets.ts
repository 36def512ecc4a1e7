/**
 * Spend limits a harness checks before each model call (docs/spend.md, "Budgets"). Each field is a
 * ceiling on what the scope has spent plus what its calls in flight have reserved.
 */
export interface Budget {
  /** USD. */
  maxCost?: number
  /** Tokens (input + output, as `totalTokens` counts them). */
  maxTokens?: number
  /** Model call tries. */
  maxModelCalls?: number
  /** `'pause'` (default): the turn waits for `session.resume`; `'fail'`: it settles failed (`budget_exceeded`). */
  onExceeded?: 'pause' | 'fail'
}

/** `defineHarness({ budgets })`: per session, per fan-out tree (counted at its root), per principal per period. */
export interface Budgets {
  session?: Budget
  tree?: Budget
  /** Per principal (the `principal` a turn was prompted with) and `per` period (ms or `'1d'`, UTC-aligned). */
  principal?: Budget & { per: number | string }
  /** Output tokens a model call reserves beside its prompt's estimated size (default 1,024). */
  reserveOutputTokens?: number
}

export type BudgetScope = 'session' | 'tree' | 'principal'
/** The budget scopes, in the order a model call reserves them. */
const BUDGET_SCOPES: readonly BudgetScope[] = ['session', 'tree', 'principal']
/** Each ceiling's option and the unit it is counted in. */
const CEILINGS: ReadonlyArray<[string, 'cost' | 'tokens' | 'calls']> = [
  ['maxCost', 'cost'],
  ['maxTokens', 'tokens'],
  ['maxModelCalls', 'calls'],
]

/** A budget as the harness keeps it: the ceilings in the units Redis counts (nano-USD, tokens, calls). */
export interface ResolvedBudget {
  readonly max: { readonly cost?: number; readonly tokens?: number; readonly calls?: number }
  readonly onExceeded: 'pause' | 'fail'
  /** The principal budget's period, ms. */
  readonly perMs?: number
}

export interface ResolvedBudgets {
  readonly scopes: Readonly<Partial<Record<BudgetScope, ResolvedBudget>>>
  readonly reserveOutputTokens: number
}

const DEFAULT_RESERVE_OUTPUT_TOKENS = 1_024

/**
 * Checks and resolves `budgets` (`parseMs` reads a period); returns the problem as text when one is
 * wrong. A budget with no ceiling is refused: it would limit nothing.
 */
export function resolveBudgets(budgets: unknown, parseMs: (value: number | string) => number): ResolvedBudgets | string | undefined {
  if (budgets === undefined) return undefined
  if (typeof budgets !== 'object' || budgets === null || Array.isArray(budgets))
    return 'budgets must be an object of { session?, tree?, principal?, reserveOutputTokens? }'
  const scopes: Partial<Record<BudgetScope, ResolvedBudget>> = {}
  for (const key of Object.keys(budgets)) {
    if (key !== 'reserveOutputTokens' && !BUDGET_SCOPES.some((scope) => scope === key))
      return `budgets.${key} is not a budget scope: use session, tree or principal`
  }
  for (const scope of BUDGET_SCOPES) {
    const budget: unknown = Reflect.get(budgets, scope)
    if (budget === undefined) continue
    const resolved = resolveBudget(`budgets.${scope}`, budget, scope === 'principal' ? parseMs : undefined)
    if (typeof resolved === 'string') return resolved
    scopes[scope] = resolved
  }
  const reserve: unknown = Reflect.get(budgets, 'reserveOutputTokens') ?? DEFAULT_RESERVE_OUTPUT_TOKENS
  if (typeof reserve !== 'number' || !Number.isInteger(reserve) || reserve < 0)
    return `budgets.reserveOutputTokens must be a whole number ≥ 0, got ${JSON.stringify(reserve) ?? 'undefined'}`
  return { scopes, reserveOutputTokens: reserve }
}

function resolveBudget(path: string, budget: unknown, parseMs?: (value: number | string) => number): ResolvedBudget | string {
  if (typeof budget !== 'object' || budget === null || Array.isArray(budget))
    return `${path} must be an object of { maxCost?, maxTokens?, maxModelCalls?, onExceeded? }`
  const read = (key: string): unknown => Reflect.get(budget, key)
  const max: { cost?: number; tokens?: number; calls?: number } = {}
  for (const [key, unit] of CEILINGS) {
    const value = read(key)
    if (value === undefined) continue
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      return `${path}.${key} must be a number ≥ 0${key === 'maxCost' ? ' (USD)' : ''}, got ${JSON.stringify(value) ?? 'undefined'}`
    max[unit] = unit === 'cost' ? Math.round(value * 1e9) : Math.floor(value)
  }
  if (Object.keys(max).length === 0) return `${path} sets no ceiling: give maxCost, maxTokens or maxModelCalls`
  const onExceeded = read('onExceeded') ?? 'pause'
  if (onExceeded !== 'pause' && onExceeded !== 'fail')
    return `${path}.onExceeded must be 'pause' or 'fail', got ${JSON.stringify(onExceeded)}`
  if (!parseMs) return { max, onExceeded }
  const per = read('per')
  if (typeof per !== 'number' && typeof per !== 'string')
    return `${path}.per must be a period (ms, or a string like '1d'), got ${JSON.stringify(per) ?? 'undefined'}`
  let perMs: number
  try {
    perMs = parseMs(per)
  } catch (error) {
    return `${path}.per: ${error instanceof Error ? error.message : String(error)}`
  }
  if (perMs < 1_000) return `${path}.per must be at least 1 s, got ${perMs} ms`
  return { max, onExceeded, perMs }
}
