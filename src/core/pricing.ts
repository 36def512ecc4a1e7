/** A model's price per million tokens, in USD (docs/spend.md). Cached input is priced as input when absent. */
export interface ModelPrice {
  inputPerMTok: number
  outputPerMTok: number
  cachedInputPerMTok?: number
}

/** `defineHarness({ pricing })`: prices by model name (the adapter's `model`). */
export type Pricing = Readonly<Record<string, ModelPrice>>

/** The counts a price applies to (the TokenUsage names). */
export interface PricedCounts {
  promptTokens: number
  completionTokens: number
  cachedTokens?: number
}

/**
 * The cost of a call in nano-USD (1e-9 USD, an integer: totals add up exactly in Redis). Cached
 * input is part of promptTokens: it is priced at `cachedInputPerMTok` and the rest at `inputPerMTok`.
 */
export function costNanos(counts: PricedCounts, price: ModelPrice): number {
  const cached = Math.min(counts.cachedTokens ?? 0, counts.promptTokens)
  // USD per MTok × tokens = 1e3 nano-USD per token per (USD per MTok)
  return Math.round(
    (counts.promptTokens - cached) * price.inputPerMTok * 1e3 +
      cached * (price.cachedInputPerMTok ?? price.inputPerMTok) * 1e3 +
      counts.completionTokens * price.outputPerMTok * 1e3,
  )
}

/** USD to nano-USD, the unit totals are kept in. */
export const toNanos = (usd: number): number => Math.round(usd * 1e9)
/** Nano-USD to USD. */
export const fromNanos = (nanos: number): number => nanos / 1e9

/** Checks a `pricing` option: each model's prices finite numbers ≥ 0. Returns the problem, or undefined. */
export function pricingProblem(pricing: unknown): string | undefined {
  if (pricing === undefined) return undefined
  if (typeof pricing !== 'object' || pricing === null || Array.isArray(pricing))
    return 'pricing must be an object of { [model]: { inputPerMTok, outputPerMTok, cachedInputPerMTok? } } (USD per million tokens)'
  for (const [model, price] of Object.entries(pricing)) {
    for (const key of ['inputPerMTok', 'outputPerMTok', 'cachedInputPerMTok'] as const) {
      const value: unknown = typeof price === 'object' && price !== null ? Reflect.get(price, key) : undefined
      if (value === undefined && key === 'cachedInputPerMTok') continue
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
        return `pricing[${JSON.stringify(model)}].${key} must be a number ≥ 0 (USD per million tokens), got ${JSON.stringify(value) ?? 'undefined'}`
    }
  }
  return undefined
}
